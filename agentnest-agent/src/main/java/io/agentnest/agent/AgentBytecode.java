package io.agentnest.agent;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The agent compiled ahead of time, so that a sandbox's interpreter unmarshals it instead of
 * compiling 2,000 lines at every start (35-90 ms of CPU on this project's 2-core machine, on the
 * critical path of every cold start and every pool member's start).
 *
 * <p>The host's own {@code python3} compiles it once into {@code <cache>/agent-<hash>.bin} (the
 * interpreter's 4-byte magic number, then {@code marshal.dumps} of the code); later processes read
 * that file. The bootstrap uses the code only when its own interpreter has the same magic number
 * (the same Python minor version), and compiles the source otherwise: a host without {@code
 * python3}, or with another version than the image's, only loses the speed-up. The file is written
 * by the host into its own home; nothing a sandbox writes is ever read back as code.
 *
 * <p>{@code -Dagentnest.agent.bytecode=false} turns it off.
 */
public final class AgentBytecode {
  /** Bigger than any compiled agent by far; a larger file is not ours. */
  static final int MAX_BYTES = 8 << 20;

  private static final String COMPILE =
      "import sys,marshal,importlib.util as u\n"
          + "s=sys.stdin.buffer.read().decode('utf-8')\n"
          + "sys.stdout.buffer.write(u.MAGIC_NUMBER+marshal.dumps("
          + "compile(s,'agentnest-agent.py','exec')))\n";

  private static final AtomicBoolean STARTED = new AtomicBoolean();
  private static volatile byte[] code = new byte[0];

  private AgentBytecode() {}

  /** The compiled agent (magic number first), or empty while there is none. */
  static byte[] current() {
    return code;
  }

  /**
   * Makes the compiled agent available soon, without waiting: reads it from {@code cacheDir}, or
   * has the host's {@code python3} compile it there, on a background thread, once per process. Call
   * before a sandbox is created: its engine start takes longer than this.
   */
  public static void prepare(Path cacheDir) {
    if (!enabled() || !STARTED.compareAndSet(false, true)) {
      return;
    }
    Thread t = new Thread(() -> load(cacheDir), "agentnest-agent-bytecode");
    t.setDaemon(true);
    t.start();
  }

  private static boolean enabled() {
    return !"false".equals(System.getProperty("agentnest.agent.bytecode"));
  }

  static void load(Path cacheDir) {
    Path file = cacheDir.resolve("agent-" + hash(AgentSources.agentSource()) + ".bin");
    try {
      if (Files.isRegularFile(file) && Files.size(file) > 4 && Files.size(file) <= MAX_BYTES) {
        code = Files.readAllBytes(file);
        return;
      }
      byte[] compiled = compile(AgentSources.agentSource());
      if (compiled.length > 4) {
        Files.createDirectories(cacheDir);
        Path tmp = Files.createTempFile(cacheDir, "agent-", ".tmp");
        Files.write(tmp, compiled);
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        code = compiled;
      }
    } catch (IOException | RuntimeException e) {
      // Only the speed-up is lost (a read-only home, a full disk): the bootstrap compiles the
      // source, as it does on a host without python3.
    }
  }

  /** Runs the host's python3 on the source; empty when there is none or it fails. */
  static byte[] compile(byte[] source) throws IOException {
    Process p;
    try {
      p =
          new ProcessBuilder(List.of("python3", "-I", "-S", "-c", COMPILE))
              .redirectError(ProcessBuilder.Redirect.DISCARD)
              .start();
    } catch (IOException noPython) {
      return new byte[0];
    }
    try {
      try (OutputStream in = p.getOutputStream()) {
        in.write(source);
      }
      byte[] out;
      try (InputStream o = p.getInputStream()) {
        out = o.readNBytes(MAX_BYTES + 1);
      }
      if (!p.waitFor(20, TimeUnit.SECONDS) || p.exitValue() != 0 || out.length > MAX_BYTES) {
        return new byte[0];
      }
      return out;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new byte[0];
    } finally {
      p.destroyForcibly();
    }
  }

  private static String hash(byte[] source) {
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest(source);
      return HexFormat.of().formatHex(d, 0, 12);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
