package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs the packaged CLI and other commands (node, npm) from the tests, bounded in time and output.
 */
final class Processes {
  private Processes() {}

  /**
   * How a command ended.
   *
   * @param exit its exit status (127: it could not start; -1: it could not be stopped)
   * @param out its stdout, up to 8 MiB
   * @param err its stderr, up to 8 MiB
   * @param finished whether it exited before its deadline (otherwise it was killed)
   */
  record Run(int exit, String out, String err, boolean finished) {}

  /** Runs a command with a deadline, collecting up to 8 MiB of each stream. */
  static Run run(List<String> cmd, Path cwd, long timeoutSeconds)
      throws IOException, InterruptedException {
    return run(cmd, cwd, timeoutSeconds, Map.of());
  }

  static Run run(List<String> cmd, Path cwd, long timeoutSeconds, Map<String, String> env)
      throws IOException, InterruptedException {
    return run(cmd, cwd, timeoutSeconds, env, new byte[0]);
  }

  /** As {@link #run(List, Path, long, Map)}, with {@code stdin} written to the command first. */
  static Run run(
      List<String> cmd, Path cwd, long timeoutSeconds, Map<String, String> env, byte[] stdin)
      throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(new ArrayList<>(cmd)).directory(cwd.toFile());
    pb.environment().putAll(env);
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      return new Run(127, "", String.valueOf(e.getMessage()), true);
    }
    try (var in = p.getOutputStream()) {
      in.write(stdin);
    } catch (IOException e) {
      // It exited without reading its input: its exit and output say why.
    }
    byte[][] streams = new byte[2][];
    Thread outReader = reader(p.getInputStream(), streams, 0);
    Thread errReader = reader(p.getErrorStream(), streams, 1);
    boolean finished = p.waitFor(timeoutSeconds, TimeUnit.SECONDS);
    if (!finished) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
    }
    outReader.join(10_000);
    errReader.join(10_000);
    int exit = p.isAlive() ? -1 : p.exitValue();
    return new Run(
        exit,
        new String(streams[0] == null ? new byte[0] : streams[0], StandardCharsets.UTF_8),
        new String(streams[1] == null ? new byte[0] : streams[1], StandardCharsets.UTF_8),
        finished);
  }

  /** Reads up to 8 MiB of {@code in} into {@code into[slot]} on a thread of its own. */
  private static Thread reader(InputStream in, byte[][] into, int slot) {
    Thread t =
        new Thread(
            () -> {
              try {
                into[slot] = in.readNBytes(8 << 20);
              } catch (IOException e) {
                into[slot] = new byte[0];
              }
            });
    t.start();
    return t;
  }

  static String java() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  static Path jar() {
    Path jar = Path.of("target", "agentnest.jar").toAbsolutePath();
    assertThat(jar).as("package phase builds the CLI jar").exists();
    return jar;
  }

  /**
   * The command line that runs the packaged CLI ({@code target/agentnest.jar}) with {@code args}.
   */
  static List<String> cli(String... args) {
    List<String> cmd = new ArrayList<>(List.of(java(), "-jar", jar().toString()));
    cmd.addAll(List.of(args));
    return cmd;
  }
}
