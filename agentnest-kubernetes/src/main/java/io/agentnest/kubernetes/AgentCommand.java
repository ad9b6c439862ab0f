package io.agentnest.kubernetes;

import io.agentnest.agent.AgentSources;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Starting an agent in a pod that already runs, for {@code attach}: the agent runs as an exec, so
 * reattaching starts a new one, and what {@code create} sends a new agent (its sources, then the
 * {@code init} frame) is sent here. The host that attaches does not know the secrets of the
 * sandbox's creator: the new agent gets none, and the files in the sandbox are all that carries
 * over (Python sessions do not).
 */
final class AgentCommand {
  private AgentCommand() {}

  static List<String> get() {
    return List.of("python3", "-u", "-c", AgentSources.bootstrap());
  }

  /** The bytes a freshly started agent expects before its {@code ready}. */
  static byte[] startBytes() {
    byte[] header = "{\"op\":\"init\"}".getBytes(StandardCharsets.US_ASCII);
    byte[] payload = "{\"env\":{}}".getBytes(StandardCharsets.US_ASCII);
    ByteBuffer init = ByteBuffer.allocate(10 + header.length + payload.length);
    // The channel's frame: magic 0xA9 'N', header and payload lengths, header JSON, payload.
    init.put((byte) 0xA9).put((byte) 'N').putInt(header.length).putInt(payload.length);
    init.put(header).put(payload);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(AgentSources.bootstrapPayload());
    out.writeBytes(init.array());
    return out.toByteArray();
  }
}
