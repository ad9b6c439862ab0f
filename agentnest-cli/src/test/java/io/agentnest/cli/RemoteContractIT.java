package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ForkReport;
import io.agentnest.SandboxConfig;
import io.agentnest.cli.Processes.Run;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.spi.Backends;
import io.agentnest.tck.BackendContract;
import io.agentnest.tck.BackendUnderTest;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The {@code remote} backend passes the backend contract: every test of the suite runs in this JVM
 * against a real {@code agentnest serve} process (its own home, Docker behind it) through the HTTP
 * API, with this process pointed at it as AGENTNEST_URL would (the system properties {@code
 * agentnest.url} and {@code agentnest.api-key}), so the statics ({@code Sandbox.snapshots}, {@code
 * removeSnapshot}, {@code restore}) go to the server too.
 */
@ExtendWith(DockerEngineRequired.class)
@ExtendWith(RemoteContractIT.ServerExtension.class)
class RemoteContractIT implements BackendContract {
  private static final Pattern LISTENING =
      Pattern.compile("listening on (http://127\\.0\\.0\\.1:[0-9]+)");

  private static final ExtensionContext.Namespace NS =
      ExtensionContext.Namespace.create(RemoteContractIT.class);

  /**
   * The server outlives this class's context: the suite's shared sandboxes are closed when that
   * context closes, after {@code @AfterAll}, and they need the server to be destroyed.
   */
  static final class ServerExtension implements BeforeAllCallback, AfterAllCallback {
    @Override
    public void beforeAll(ExtensionContext context) {
      Server s =
          context
              .getRoot()
              .getStore(NS)
              .getOrComputeIfAbsent("server", k -> Server.start(), Server.class);
      System.setProperty("agentnest.url", s.url);
      System.setProperty("agentnest.api-key", s.key);
    }

    /** Later test classes in this JVM use their own backends again. */
    @Override
    public void afterAll(ExtensionContext context) {
      System.clearProperty("agentnest.url");
      System.clearProperty("agentnest.api-key");
    }
  }

  /** An {@code agentnest serve} process with its own home and one tenant. */
  static final class Server implements ExtensionContext.Store.CloseableResource {
    final Process process;
    final Path home;
    final String url;
    final String key;

    private Server(Process process, Path home, String url, String key) {
      this.process = process;
      this.home = home;
      this.url = url;
      this.key = key;
    }

    static Server start() {
      try {
        Path h = Files.createTempDirectory("agentnest-remote-contract");
        Map<String, String> env = Map.of("AGENTNEST_HOME", h.toString());
        Run add =
            Processes.run(
                Processes.cli(
                    "tenant",
                    "add",
                    "contract",
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
        ProcessBuilder pb = new ProcessBuilder(Processes.cli("serve", "--listen", "127.0.0.1:0"));
        pb.environment().put("AGENTNEST_HOME", h.toString());
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
                      // discard: a full pipe would block the server
                    }
                  } catch (IOException closed) {
                    // the server stopped
                  }
                });
        drain.setDaemon(true);
        drain.start();
        return new Server(p, h, url, add.out().strip());
      } catch (IOException | InterruptedException e) {
        throw new IllegalStateException("cannot start agentnest serve: " + e, e);
      }
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

  @Override
  public BackendUnderTest target() {
    return new BackendUnderTest(
        Backends.get("remote"),
        SandboxConfig.builder().backend("remote").build(),
        ForkReport.Mode.STATE_TRANSFER,
        false,
        false);
  }
}
