package io.agentnest.cli;

import io.agentnest.ConfigException;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * This process's terminal through {@code stty} on {@code /dev/tty} (Java has no termios): its size,
 * raw mode for a shell in a sandbox, and the saved mode put back at the end, also when the JVM is
 * ended by a signal.
 */
final class TtyMode {
  /** A window size in character cells. */
  record Size(int rows, int cols) {}

  static final Size FALLBACK = new Size(24, 80);

  private final String saved;
  private final Thread restoreAtExit;

  private TtyMode(String saved) {
    this.saved = saved;
    this.restoreAtExit = new Thread(this::restoreQuietly, "agentnest-tty-restore");
  }

  static TtyMode current() {
    return new TtyMode(stty("-g").strip());
  }

  /** Keys go to the sandbox as typed (^C, ^D, ^Z included); nothing is echoed here. */
  void raw() {
    Runtime.getRuntime().addShutdownHook(restoreAtExit);
    stty("raw", "-echo");
  }

  void restore() {
    try {
      Runtime.getRuntime().removeShutdownHook(restoreAtExit);
    } catch (IllegalStateException exiting) {
      // The hook runs (or ran) anyway.
    }
    restoreQuietly();
  }

  private void restoreQuietly() {
    try {
      stty(saved);
    } catch (RuntimeException e) {
      System.err.println(
          "warning: could not restore the terminal (" + e.getMessage() + "): run 'stty sane'");
    }
  }

  /** The window's size; {@link #FALLBACK} when the terminal does not say. */
  Size size() {
    try {
      String[] p = stty("size").strip().split("\\s+");
      int rows = Integer.parseInt(p[0]);
      int cols = Integer.parseInt(p[1]);
      return rows > 0 && cols > 0 ? new Size(rows, cols) : FALLBACK;
    } catch (RuntimeException unreadable) {
      return FALLBACK;
    }
  }

  private static String stty(String... args) {
    List<String> cmd = new ArrayList<>();
    cmd.add("stty");
    cmd.addAll(List.of(args));
    ProcessBuilder pb =
        new ProcessBuilder(cmd)
            .redirectInput(new File("/dev/tty"))
            .redirectError(ProcessBuilder.Redirect.DISCARD);
    try {
      Process p = pb.start();
      byte[] out;
      try (InputStream in = p.getInputStream()) {
        out = in.readNBytes(4096);
      }
      if (!p.waitFor(5, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new ConfigException("stty " + String.join(" ", args) + " did not answer");
      }
      if (p.exitValue() != 0) {
        throw new ConfigException(
            "stty "
                + String.join(" ", args)
                + " failed: this terminal cannot be set up for a shell");
      }
      return new String(out, StandardCharsets.US_ASCII);
    } catch (IOException e) {
      throw new ConfigException(
          "cannot run stty for the terminal (" + e.getMessage() + "): install coreutils");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ConfigException("interrupted while setting up the terminal");
    }
  }
}
