package io.agentnest;

import java.nio.charset.StandardCharsets;

/**
 * A piece of output as the sandbox produced it.
 *
 * @param stream which stream it came from
 * @param data the bytes, exactly as printed (not yet decoded)
 */
public record OutputChunk(Stream stream, byte[] data) {
  /** Output stream. */
  public enum Stream {
    STDOUT,
    STDERR
  }

  public OutputChunk {
    data = data.clone();
  }

  @Override
  public byte[] data() {
    return data.clone();
  }

  /** The chunk decoded as UTF-8, invalid bytes replaced. */
  public String text() {
    return new String(data, StandardCharsets.UTF_8);
  }
}
