package io.agentnest.microvm.internal;

import io.agentnest.AgentNestException;
import io.agentnest.ConfigException;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The host programs the backend runs (mke2fs, mmdebstrap, apt, dpkg-deb): found in the system
 * directories, run with a deadline and no input, their own words in the error when they fail.
 */
public final class HostTools {
  private static final int MAX_OUTPUT = 64 * 1024;

  private HostTools() {}

  /** The program, or an error naming the Debian package that has it. */
  public static Path require(String tool, String pkg) {
    for (String dir : List.of("/usr/bin", "/usr/sbin", "/bin", "/sbin")) {
      Path p = Path.of(dir, tool);
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    throw new ConfigException(
        tool + " is not installed: 'apt-get install " + pkg + "' (scripts/setup-host.sh does it)");
  }

  /**
   * Runs {@code cmd} in {@code dir} and returns its output (the first 64 KiB; the rest is read and
   * dropped so it never blocks); {@code hint} ends the error message when it fails.
   */
  public static String run(List<String> cmd, Path dir, Duration timeout, String hint) {
    try {
      Process p =
          new ProcessBuilder(cmd)
              .directory(dir.toFile())
              .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
              .redirectErrorStream(true)
              .start();
      byte[] out = p.getInputStream().readNBytes(MAX_OUTPUT);
      p.getInputStream().transferTo(OutputStream.nullOutputStream());
      if (!p.waitFor(timeout.toSeconds(), TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new AgentNestException(
            cmd.get(0) + " did not finish within " + timeout.toSeconds() + " s");
      }
      String text = new String(out, StandardCharsets.UTF_8);
      if (p.exitValue() != 0) {
        throw new AgentNestException(
            Path.of(cmd.get(0)).getFileName()
                + " failed with exit "
                + p.exitValue()
                + ": "
                + text.strip()
                + hint);
      }
      return text;
    } catch (IOException e) {
      throw new AgentNestException("cannot run " + cmd.get(0) + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AgentNestException("interrupted while running " + cmd.get(0), e);
    }
  }
}
