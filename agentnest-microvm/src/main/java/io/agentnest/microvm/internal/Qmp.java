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
 * output (a bounded ring buffer in QEMU, so nothing of the guest's console reaches the disk), and a
 * {@link Session} for the checkpoint's sequence (stop, migrate, query, cont).
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

  /** One command as QMP's JSON line. */
  static String request(String command, Map<String, Object> args) throws IOException {
    return JSON.writeValueAsString(
        args.isEmpty()
            ? Map.of("execute", command)
            : Map.of("execute", command, "arguments", args));
  }

  /** A monitor connection kept open for several commands, each bounded by the caller's deadline. */
  static final class Session implements AutoCloseable {
    private final SocketChannel ch;
    private final DeadlineLines lines;

    private Session(SocketChannel ch, DeadlineLines lines) {
      this.ch = ch;
      this.lines = lines;
    }

    static Session open(Path socket, long deadline) throws IOException {
      SocketChannel ch = DeadlineLines.connect(socket, deadline);
      DeadlineLines lines = null;
      try {
        lines = new DeadlineLines(ch, 1 << 20);
        if (lines.readLine(deadline).isEmpty()) {
          throw new IOException("QEMU's monitor did not greet within the deadline");
        }
        Session s = new Session(ch, lines);
        s.run("qmp_capabilities", Map.of(), deadline);
        return s;
      } catch (IOException | RuntimeException e) {
        if (lines != null) {
          lines.close();
        }
        ch.close();
        throw e;
      }
    }

    /** Runs {@code command}; its {@code return} value, or an IOException with QEMU's reason. */
    JsonNode run(String command, Map<String, Object> args, long deadline) throws IOException {
      lines.write(request(command, args));
      Optional<JsonNode> a = answer(lines, deadline);
      if (a.isEmpty()) {
        throw new IOException("QEMU's monitor did not answer '" + command + "' in time");
      }
      JsonNode error = a.get().path("error");
      if (!error.isMissingNode()) {
        String desc = error.path("desc").asText("");
        throw new IOException(
            "QEMU refused '"
                + command
                + "': "
                + (desc.length() > 300 ? desc.substring(0, 300) + "..." : desc));
      }
      return a.get().path("return");
    }

    @Override
    public void close() throws IOException {
      try {
        lines.close();
      } finally {
        ch.close();
      }
    }
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
      lines.write(request(command, args));
      return answer(lines, deadline);
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /** The next reply, skipping the asynchronous events QEMU may send in between. */
  private static Optional<JsonNode> answer(DeadlineLines lines, long deadline) throws IOException {
    for (int i = 0; i < 1024; i++) {
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
