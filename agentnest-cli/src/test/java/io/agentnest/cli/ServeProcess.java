package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.cli.Processes.Run;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real {@code agentnest serve} process for a test: its own home, one tenant with room for a test
 * suite, loopback on a free port; closed (and its home removed) with the store that holds it.
 */
final class ServeProcess implements ExtensionContext.Store.CloseableResource {
  private static final Pattern LISTENING =
      Pattern.compile("listening on (https?://127\\.0\\.0\\.1:[0-9]+)");

  final Process process;
  final Path home;
  final String url;
  final String key;

  private ServeProcess(Process process, Path home, String url, String key) {
    this.process = process;
    this.home = home;
    this.url = url;
    this.key = key;
  }

  static ServeProcess start(String tenant) {
    try {
      Path h = Files.createTempDirectory("agentnest-remote-contract");
      Map<String, String> env = Map.of("AGENTNEST_HOME", h.toString());
      Run add =
          Processes.run(
              Processes.cli(
                  "tenant",
                  "add",
                  tenant,
                  "--max-sandboxes",
                  "12",
                  "--memory",
                  "8g",
                  "--cpus",
                  "12",
                  "--rps",
                  "500",
                  "--executions-per-minute",
                  "6000"),
              Path.of("."),
              120,
              env);
      assertThat(add.exit()).as(add.err()).isZero();
      Started started = serve(h);
      return new ServeProcess(started.process(), h, started.url(), add.out().strip());
    } catch (IOException | InterruptedException e) {
      throw new IllegalStateException("cannot start agentnest serve: " + e, e);
    }
  }

  /** A running {@code agentnest serve} and the address it printed. */
  record Started(Process process, String url) {}

  /**
   * Starts {@code agentnest serve} on {@code home} on a free loopback port and drains its log (a
   * full pipe would block it); the caller stops the process.
   */
  static Started serve(Path home) throws IOException {
    return serve(home, List.of(), Map.of());
  }

  /** As {@link #serve(Path)}, with more arguments to {@code serve} and more environment. */
  static Started serve(Path home, List<String> args, Map<String, String> env) throws IOException {
    List<String> cmd = new ArrayList<>(Processes.cli("serve", "--listen", "127.0.0.1:0"));
    cmd.addAll(args);
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().putAll(env);
    pb.environment().put("AGENTNEST_HOME", home.toString());
    pb.environment().remove("AGENTNEST_URL");
    pb.redirectOutput(ProcessBuilder.Redirect.DISCARD);
    Process p = pb.start();
    BufferedReader err =
        new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8));
    String url = null;
    String line;
    for (int i = 0; i < 200 && url == null && (line = err.readLine()) != null; i++) {
      Matcher m = LISTENING.matcher(line);
      url = m.find() ? m.group(1) : null;
    }
    if (url == null) {
      p.destroyForcibly();
      throw new IllegalStateException("agentnest serve printed no address");
    }
    Thread drain =
        new Thread(
            () -> {
              try {
                while (err.readLine() != null) {
                  // discard
                }
              } catch (IOException closed) {
                // the server stopped
              }
            });
    drain.setDaemon(true);
    drain.start();
    return new Started(p, url);
  }

  @Override
  public void close() throws Exception {
    process.destroy();
    if (!process.waitFor(60, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor(30, TimeUnit.SECONDS);
    }
    // The server's home (tenant store, audit, snapshots): nothing of it is kept.
    Processes.run(List.of("rm", "-rf", home.toString()), Path.of("."), 60);
  }
}
