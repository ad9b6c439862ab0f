package io.agentnest.spi;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectableChannel;
import java.util.function.Consumer;

/**
 * The agent's output as a channel that one shared selector thread of the host watches, so that an
 * idle sandbox costs the host no platform thread of its own. Optional: a backend offers it through
 * {@link BackendSandbox#selectableStream()} where its connection is a selectable channel (Docker's
 * attach over a Unix socket); others keep a thread reading {@link BackendSandbox#fromAgent()}.
 *
 * <p>Everything passed on is untrusted sandbox output: the host bounds and validates it.
 */
public interface SelectableAgentStream {
  /** The channel to watch for readability; it is in non-blocking mode. */
  SelectableChannel channel();

  /**
   * Reads what has arrived, never blocking, and passes the bytes the agent wrote to its stdout to
   * {@code stdout}, in order (a transport's own framing, such as Docker's stream multiplexing, is
   * taken off here). The buffer handed to {@code stdout} is only valid during the call.
   *
   * @param scratch a buffer of the caller's to read into (shared between streams: this method keeps
   *     no reference to it)
   * @return the number of bytes read from the channel (0: nothing more for now), or -1 at the end
   *     of the stream
   */
  int read(ByteBuffer scratch, Consumer<ByteBuffer> stdout) throws IOException;
}
