package io.agentnest.microvm.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * A few commands of QEMU's machine protocol (QMP) on a guest's monitor socket: the console's recent
 * output (a bounded ring buffer in QEMU, so nothing of the guest's console reaches the disk) and
 * quitting.
 */
public final class Qmp {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long TIMEOUT_NS = 3_000_000_000L;

  private Qmp() {}

  /** The guest console's last bytes (at most {@code max}), or empty when QEMU does not answer. */
  public static String consoleTail(Path socket, int max) {
    return execute(
            socket, "ringbuf-read", Map.of("device", "console", "size", max, "format", "utf8"))
        .map(r -> r.path("return").asText(""))
        .orElse("");
  }

  static Optional<JsonNode> execute(Path socket, String command, Map<String, Object> args) {
    long deadline = System.nanoTime() + TIMEOUT_NS;
    try (SocketChannel ch = DeadlineLines.connect(socket, deadline);
        DeadlineLines lines = new DeadlineLines(ch, 1 << 20)) {
      if (lines.readLine(deadline).isEmpty()) { // the greeting
        return Optional.empty();
      }
      lines.write("{\"execute\":\"qmp_capabilities\"}");
      if (answer(lines, deadline).isEmpty()) {
        return Optional.empty();
      }
      lines.write(
          JSON.writeValueAsString(
              args.isEmpty()
                  ? Map.of("execute", command)
                  : Map.of("execute", command, "arguments", args)));
      return answer(lines, deadline);
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /** The next reply, skipping the asynchronous events QEMU may send in between. */
  private static Optional<JsonNode> answer(DeadlineLines lines, long deadline) throws IOException {
    for (int i = 0; i < 64; i++) {
      Optional<String> line = lines.readLine(deadline);
      if (line.isEmpty()) {
        return Optional.empty();
      }
      JsonNode n = JSON.readTree(line.get());
      if (n.has("return") || n.has("error")) {
        return Optional.of(n);
      }
    }
    return Optional.empty();
  }
}
