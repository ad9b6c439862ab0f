package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ConfigException;
import io.agentnest.SandboxConfig;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** How ls, rm, prune, doctor and run choose their backend (issue 19). No backend is contacted. */
class BackendOptionsTest {
  static final String KUBERNETES_FILE =
      """
      version: 1
      defaults:
        backend: kubernetes
        kubernetes:
          namespace_prefix: team-
          tenant: search
      profiles:
        local:
          backend: docker
      """;

  static <T> T parse(T command, String... args) {
    new CommandLine(command).parseArgs(args);
    return command;
  }

  static Path file(Path dir, String yaml) throws Exception {
    Path f = dir.resolve("agentnest.yaml");
    Files.writeString(f, yaml);
    return f;
  }

  @Test
  void theFlagChoosesTheBackend() {
    assertThat(parse(new ListCommand(), "--backend", "kubernetes").target.name())
        .isEqualTo("kubernetes");
    assertThat(parse(new PruneCommand(), "--backend", "docker").target.name()).isEqualTo("docker");
  }

  @Test
  void withoutTheFlagTheConfigurationFilesBackendAndProfileChoose(@TempDir Path dir)
      throws Exception {
    Path f = file(dir, KUBERNETES_FILE);
    assertThat(parse(new ListCommand(), "--config", f.toString()).target.name())
        .isEqualTo("kubernetes");
    assertThat(
            parse(new RemoveCommand(), "--config", f.toString(), "--profile", "local")
                .target
                .name())
        .isEqualTo("docker");
    assertThat(
            parse(new DoctorCommand(), "--config", f.toString(), "--backend", "docker")
                .target
                .name())
        .as("the flag wins over the file")
        .isEqualTo("docker");
  }

  @Test
  void anUnknownBackendNamesTheInstalledOnesAndExitsWithTheConfigCode() {
    assertThatThrownBy(() -> parse(new ListCommand(), "--backend", "kube").target.name())
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "--backend 'kube' is not available: use one of docker, kubernetes, microvm, remote");
    PrintStream old = System.err;
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    try {
      System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
      assertThat(AgentNestCli.execute("ls", "--backend", "kube")).isEqualTo(ExitCodes.CONFIG);
    } finally {
      System.setErr(old);
    }
  }

  @Test
  void runTakesTheBackendAndTenantFromFlagsOverTheFile(@TempDir Path dir) throws Exception {
    Path f = file(dir, KUBERNETES_FILE);
    SandboxConfig fromFile = parse(new RunCommand(), "--config", f.toString()).sandbox.toConfig();
    assertThat(fromFile.backend()).isEqualTo("kubernetes");
    assertThat(fromFile.tenant()).isEqualTo("search");

    SandboxConfig flags =
        parse(
                new RunCommand(),
                "--config",
                f.toString(),
                "--profile",
                "local",
                "--backend",
                "kubernetes",
                "--tenant",
                "ops")
            .sandbox
            .toConfig();
    assertThat(flags.backend()).isEqualTo("kubernetes");
    assertThat(flags.tenant()).isEqualTo("ops");
  }

  @Test
  void aTenantThatCannotNameANamespaceIsAConfigError() {
    RunCommand run = parse(new RunCommand(), "--backend", "kubernetes", "--tenant", "Ops_1");
    assertThatThrownBy(() -> run.sandbox.toConfig())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("tenant 'Ops_1' is invalid");
  }

  @Test
  void doctorEscapesNamesTheEngineRootsOfEitherBackend() {
    // The attack itself runs against real pods in KubernetesCliIT; here only the option's contract.
    CommandLine doctor = new CommandLine(new AgentNestCli()).getSubcommands().get("doctor");
    var opt = doctor.getCommandSpec().findOption("--engine-root");
    assertThat(opt).isNotNull();
    assertThat(String.join(" ", opt.description()))
        .contains("/var/lib/docker", "/var/lib/kubelet", "/var/lib/containerd");
  }

  @Test
  void everyCommandThatManagesSandboxesOffersTheBackendChoice() {
    CommandLine cli = new CommandLine(new AgentNestCli());
    for (String name : List.of("ls", "rm", "prune", "doctor", "run")) {
      CommandLine sub = cli.getSubcommands().get(name);
      assertThat(sub.getCommandSpec().findOption("--backend")).as(name).isNotNull();
      assertThat(sub.getCommandSpec().findOption("--config")).as(name).isNotNull();
      assertThat(sub.getCommandSpec().findOption("--profile")).as(name).isNotNull();
    }
    assertThat(cli.getSubcommands().get("run").getCommandSpec().findOption("--tenant")).isNotNull();
  }
}
