package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ExecResult;
import io.agentnest.ForkReport;
import io.agentnest.PythonSession;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import io.agentnest.audit.AuditLog;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Secret values reach the sandbox over the agent's channel, never through the container's
 * configuration: the engine's inspect output and its files for the container hold no secret value,
 * while every process the sandbox starts (shell, sessions old and new, their children, forks,
 * restores) sees it as an environment variable and output stays masked.
 */
@ExtendWith(DockerEngineRequired.class)
class SecretDeliveryIT {
  static final String NAME = "API_TOKEN";
  static final String VALUE = "sd-" + UUID.randomUUID().toString().replace("-", "");
  static final String HASH = sha256(VALUE);

  @TempDir static Path home;
  static TestHome isolated;

  @BeforeAll
  static void isolatedHome() {
    isolated = TestHome.use(home);
  }

  @AfterAll
  static void back() {
    isolated.close();
  }

  static String sha256(String s) {
    try {
      return HexFormat.of()
          .formatHex(
              MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  static SandboxConfig.Builder config(AuditLog log) {
    return SandboxConfig.builder().auditLog(log).secretEnv(NAME, Secret.of(VALUE));
  }

  /** The shell sees the value: its sha256, computed in the sandbox. */
  static String shellHash(Sandbox sb) {
    return sb.exec("printf %s \"$" + NAME + "\" | sha256sum | cut -c1-64").stdout().strip();
  }

  static String pythonHash(PythonSession s) {
    ExecResult r =
        s.run(
            "import os, hashlib\nhashlib.sha256(os.environ['" + NAME + "'].encode()).hexdigest()");
    return r.result() == null ? String.valueOf(r.error()) : r.result().replace("'", "");
  }

  /** Neither inspect nor any file of the container under the data root holds the value. */
  static void engineKeepsNoSecret(Sandbox sb) throws Exception {
    engineKeepsNoSecret(sb, true);
  }

  /**
   * {@code agentOnHost}: the container's main process on the host is the agent (runc); under gVisor
   * it is runsc, and the agent's environment lives inside gVisor's kernel.
   */
  static void engineKeepsNoSecret(Sandbox sb, boolean agentOnHost) throws Exception {
    String inspect = EngineFiles.inspect(sb.id());
    assertThat(inspect).as("docker inspect").doesNotContain(VALUE);
    List<Path> dirs = EngineFiles.containerDirs(inspect);
    assertThat(EngineFiles.filesContaining(dirs, VALUE.getBytes(StandardCharsets.UTF_8)))
        .as("files under %s", dirs)
        .isEmpty();
    if (!agentOnHost) {
      return;
    }
    // The agent's own environment (its /proc/PID/environ, seen from the host) never had it.
    long pid = EngineFiles.mainPid(inspect);
    String environ =
        new String(
            Files.readAllBytes(Path.of("/proc/" + pid + "/environ")), StandardCharsets.UTF_8);
    assertThat(environ).contains("AGENTNEST_WORKSPACE=").doesNotContain(NAME + "=", VALUE);
  }

  @Test
  void theEngineNeverStoresTheSecretYetEveryProcessOfTheSandboxHasIt() throws Exception {
    try (AuditLog log = AuditLog.open(home.resolve("audit-1"));
        Sandbox sb = Sandbox.create(config(log).build())) {
      assertThat(shellHash(sb)).isEqualTo(HASH);
      assertThat(pythonHash(sb.pythonSession("default"))).isEqualTo(HASH);
      assertThat(pythonHash(sb.pythonSession("started-later"))).isEqualTo(HASH);
      ExecResult child =
          sb.runCode(
              "import subprocess\n"
                  + "subprocess.run(['sh', '-c', 'printf %s \"$"
                  + NAME
                  + "\" | sha256sum'], capture_output=True, text=True).stdout[:64]");
      assertThat(child.result()).isEqualTo("'" + HASH + "'");
      ExecResult shown = sb.exec("echo \"$" + NAME + "\"");
      assertThat(shown.stdout()).isEqualTo("[REDACTED:" + NAME + "]\n");
      engineKeepsNoSecret(sb);

      try (Sandbox copy = sb.fork()) {
        assertThat(shellHash(copy)).isEqualTo(HASH);
        assertThat(pythonHash(copy.pythonSession("default"))).isEqualTo(HASH);
        assertThat(copy.exec("echo \"$" + NAME + "\"").stdout())
            .isEqualTo("[REDACTED:" + NAME + "]\n");
        engineKeepsNoSecret(copy);
      }
    }
  }

  @Test
  void aSandboxRestoredFromASnapshotGetsTheSecretAgainTheSameWay() throws Exception {
    try (AuditLog log = AuditLog.open(home.resolve("audit-2"))) {
      SandboxConfig config = config(log).build();
      try (Sandbox sb = Sandbox.create(config)) {
        sb.runCode("kept = 41");
        sb.snapshot("secret-delivery-it");
      }
      try (Sandbox restored = Sandbox.restore("secret-delivery-it", config)) {
        assertThat(restored.runCode("kept + 1").result()).isEqualTo("42");
        assertThat(shellHash(restored)).isEqualTo(HASH);
        assertThat(pythonHash(restored.pythonSession("default"))).isEqualTo(HASH);
        engineKeepsNoSecret(restored);
      } finally {
        Sandbox.removeSnapshot("secret-delivery-it");
      }
    }
  }

  /** On gVisor a fork would checkpoint memory to the engine's disk: it transfers state instead. */
  @Nested
  @ExtendWith(GvisorRequired.class)
  class OnGvisor {
    @Test
    void theSecretIsThereAndAForkTransfersStateRatherThanWritingMemoryToDisk() throws Exception {
      try (AuditLog log = AuditLog.open(home.resolve("audit-gvisor"));
          Sandbox sb = Sandbox.create(config(log).runtime("gvisor").build())) {
        assertThat(shellHash(sb)).isEqualTo(HASH);
        assertThat(pythonHash(sb.pythonSession("default"))).isEqualTo(HASH);
        engineKeepsNoSecret(sb, false);
        sb.runCode("kept = 41");
        try (Sandbox copy = sb.fork()) {
          ForkReport report = copy.forkReport().orElseThrow();
          assertThat(report.mode()).isEqualTo(ForkReport.Mode.STATE_TRANSFER);
          assertThat(report.skipped())
              .anySatisfy(
                  s -> assertThat(s.reason()).contains("secret variables", "engine's disk"));
          assertThat(copy.runCode("kept + 1").result()).isEqualTo("42");
          assertThat(shellHash(copy)).isEqualTo(HASH);
          engineKeepsNoSecret(copy, false);
        }
      }
    }
  }
}
