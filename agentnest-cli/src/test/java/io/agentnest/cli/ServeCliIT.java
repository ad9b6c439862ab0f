package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.cli.Processes.Run;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.testing.TestKeyStores;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code agentnest tenant} and {@code agentnest serve} as a user runs them, and {@code agentnest
 * run} sent to the server through AGENTNEST_URL, each CLI process with a temporary home.
 */
@ExtendWith(DockerEngineRequired.class)
class ServeCliIT {

  @Test
  void tenantAddServeAndRunThroughTheServerThenRevoke(@TempDir Path home) throws Exception {
    Map<String, String> env = Map.of("AGENTNEST_HOME", home.toString());
    Run add =
        Processes.run(
            Processes.cli(
                "tenant",
                "add",
                "search",
                "--max-sandboxes",
                "2",
                "--memory",
                "2g",
                "--cpus",
                "2",
                "--executions-per-minute",
                "120"),
            Path.of("."),
            120,
            env);
    assertThat(add.exit()).as(add.err()).isZero();
    String key = add.out().strip();
    assertThat(key).matches("ank_[0-9a-f]{16}_[A-Za-z0-9_-]{43}");
    assertThat(add.err()).contains("shown once");

    Run ls = Processes.run(Processes.cli("tenant", "ls"), Path.of("."), 120, env);
    assertThat(ls.out())
        .contains("search")
        .contains("EXEC/MIN")
        .contains(" 120 ")
        .doesNotContain(key);

    ServeProcess.Started started = ServeProcess.serve(home);
    Process server = started.process();
    try {
      String url = started.url();
      Map<String, String> client = new HashMap<>(env);
      client.put("AGENTNEST_URL", url);
      client.put("AGENTNEST_API_KEY", key);
      Run run =
          Processes.run(Processes.cli("run", "-c", "print(6 * 7)"), Path.of("."), 120, client);
      assertThat(run.exit()).as(run.err()).isZero();
      assertThat(run.out()).isEqualTo("42\n");

      Run revoke =
          Processes.run(
              Processes.cli("tenant", "revoke", key.substring(4, 20)), Path.of("."), 120, env);
      assertThat(revoke.exit()).as(revoke.err()).isZero();
      Run refused =
          Processes.run(Processes.cli("run", "-c", "print(1)"), Path.of("."), 120, client);
      assertThat(refused.exit()).isNotZero();
      assertThat(refused.err()).contains("revoked");
      server.destroy();
      assertThat(server.waitFor(60, TimeUnit.SECONDS)).isTrue();
    } finally {
      server.destroyForcibly();
      server.waitFor(30, TimeUnit.SECONDS);
    }
  }

  /**
   * The remote client speaks HTTPS with full verification: it trusts what the JVM trusts (here a
   * trust store given through JAVA_TOOL_OPTIONS, as a user would for a private CA), and a server
   * whose certificate it cannot verify is refused with the reason, before any key is sent.
   */
  @Test
  void theRemoteClientVerifiesTheServersCertificate(@TempDir Path home) throws Exception {
    Map<String, String> env = Map.of("AGENTNEST_HOME", home.toString());
    Run add = Processes.run(Processes.cli("tenant", "add", "tls"), Path.of("."), 120, env);
    assertThat(add.exit()).as(add.err()).isZero();
    String key = add.out().strip();
    String password = "changeit-test";
    Path ks = TestKeyStores.selfSigned(home, password);
    Path config = home.resolve("server.yaml");
    Files.writeString(config, "tls: {keystore: '" + ks + "', password_env: TLS_PW}\n");
    ServeProcess.Started started =
        ServeProcess.serve(
            home, List.of("--config", config.toString()), Map.of("TLS_PW", password));
    Process server = started.process();
    try {
      assertThat(started.url()).startsWith("https://");
      Map<String, String> client = new HashMap<>(env);
      client.put("AGENTNEST_URL", started.url());
      client.put("AGENTNEST_API_KEY", key);
      Run untrusted =
          Processes.run(Processes.cli("run", "-c", "print(1)"), Path.of("."), 120, client);
      assertThat(untrusted.exit()).isNotZero();
      assertThat(untrusted.err()).contains("not reachable").containsIgnoringCase("certificat");

      client.put(
          "JAVA_TOOL_OPTIONS",
          "-Djavax.net.ssl.trustStore=" + ks + " -Djavax.net.ssl.trustStorePassword=" + password);
      Run trusted =
          Processes.run(Processes.cli("run", "-c", "print(6 * 7)"), Path.of("."), 120, client);
      assertThat(trusted.exit()).as(trusted.err()).isZero();
      assertThat(trusted.out()).isEqualTo("42\n");
    } finally {
      server.destroy();
      if (!server.waitFor(60, TimeUnit.SECONDS)) {
        server.destroyForcibly();
        server.waitFor(30, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void anAdminKeyIsPrintedOnceListedByIdAndRevoked(@TempDir Path home) throws Exception {
    Map<String, String> env = Map.of("AGENTNEST_HOME", home.toString());
    Run issued = Processes.run(Processes.cli("tenant", "admin-key"), Path.of("."), 120, env);
    assertThat(issued.exit()).as(issued.err()).isZero();
    String key = issued.out().strip();
    assertThat(key).matches("ank_[0-9a-f]{16}_[A-Za-z0-9_-]{43}");
    assertThat(issued.err()).contains("shown once");
    String id = key.substring(4, 20);
    Run ls = Processes.run(Processes.cli("tenant", "ls"), Path.of("."), 120, env);
    assertThat(ls.out()).contains("admin key " + id).doesNotContain(key);
    Run revoke = Processes.run(Processes.cli("tenant", "revoke", id), Path.of("."), 120, env);
    assertThat(revoke.exit()).as(revoke.err()).isZero();
    Run after = Processes.run(Processes.cli("tenant", "ls"), Path.of("."), 120, env);
    assertThat(after.out()).contains("admin key " + id + " (revoked)");
  }

  @Test
  void aNonLoopbackBindWithoutTlsIsRefused(@TempDir Path home) throws Exception {
    Run r =
        Processes.run(
            Processes.cli("serve", "--listen", "0.0.0.0:0"),
            Path.of("."),
            120,
            Map.of("AGENTNEST_HOME", home.toString()));
    assertThat(r.exit()).isEqualTo(ExitCodes.CONFIG);
    assertThat(r.err()).contains("without TLS").contains("--insecure-behind-proxy");
  }
}
