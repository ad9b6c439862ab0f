package io.agentnest.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

class SandboxSpecBuilderTest {

  private static SandboxSpec.Builder minimal() {
    return SandboxSpec.builder()
        .image("agentnest/python:latest")
        .command("python3", "-c", "pass")
        .cpus(1.0)
        .memoryBytes(64L << 20)
        .pidsLimit(64)
        .seccompProfileJson("{}")
        .openFilesLimit(1024);
  }

  private static void assertRefused(UnaryOperator<SandboxSpec.Builder> change, String... words) {
    assertThatThrownBy(() -> change.apply(minimal()).build())
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessageContainingAll(words);
  }

  @Test
  void aBuiltSpecStartsHardenedAndNonRoot() {
    SandboxSpec s = minimal().build();

    assertThat(s.readOnlyRootFilesystem()).isTrue();
    assertThat(s.noNewPrivileges()).isTrue();
    assertThat(s.dropAllCapabilities()).isTrue();
    assertThat(s.networkDisabled()).isTrue();
    assertThat(s.user()).isEqualTo(SandboxSpec.NOBODY);
    assertThat(s.workdir()).isEqualTo("/");
    assertThat(s.runtime()).isNull();
    assertThat(s.env()).isEmpty();
    assertThat(s.labels()).isEmpty();
    assertThat(s.tmpfs()).isEmpty();
    s.requireHardened("test");
  }

  @Test
  void toBuilderRoundTripsEveryFieldAndChangesOnlyWhatIsSet() {
    SandboxSpec s =
        minimal()
            .runtime("runsc")
            .user("1000:1000")
            .env(Map.of("A", "1"))
            .workdir("/workspace")
            .labels(Map.of("k", "v"))
            .tmpfs(Map.of("/tmp", 8L))
            .readOnlyRootFilesystem(false)
            .cpuShares(128)
            .build();

    assertThat(s.toBuilder().build()).isEqualTo(s);
    assertThat(s.toBuilder().build().cpuShares()).isEqualTo(128);
    SandboxSpec open = s.toBuilder().networkDisabled(false).build();
    assertThat(open.networkDisabled()).isFalse();
    assertThat(open.toBuilder().networkDisabled(true).build()).isEqualTo(s);
  }

  @Test
  void theBuiltSpecDoesNotSeeLaterChangesToTheBuilderOrItsInputs() {
    List<String> command = new ArrayList<>(List.of("python3"));
    SandboxSpec.Builder b = minimal().command(command).labels(Map.of("k", "v"));
    SandboxSpec s = b.build();

    command.add("-x");
    b.labels(Map.of()).cpus(2);

    assertThat(s.command()).containsExactly("python3");
    assertThat(s.labels()).containsEntry("k", "v");
    assertThat(s.cpus()).isEqualTo(1.0);
  }

  @Test
  void aMissingImageOrCommandIsNamed() {
    assertThatThrownBy(() -> SandboxSpec.builder().build())
        .isExactlyInstanceOf(IllegalArgumentException.class)
        .hasMessageContainingAll("image", "missing");
    assertRefused(b -> b.image(" "), "image", "agentnest/python:latest");
    assertRefused(b -> b.command(List.of()), "command", "main process");
  }

  @Test
  void unsetOrNonPositiveLimitsAreRefusedNamingTheLimit() {
    assertRefused(b -> b.cpus(0), "cpus", "(0, 1024]");
    assertRefused(b -> b.cpus(Double.NaN), "cpus");
    assertRefused(b -> b.memoryBytes(0), "memoryBytes", "positive");
    assertRefused(b -> b.pidsLimit(-1), "pidsLimit", "positive");
    assertRefused(b -> b.openFilesLimit(0), "openFilesLimit", "positive");
  }

  @Test
  void aCpuWeightIsTheEnginesDefaultOrWithinTheKernelsRange() {
    assertThat(minimal().build().cpuShares()).isZero();
    assertThat(minimal().cpuShares(2).build().cpuShares()).isEqualTo(2);
    assertThat(minimal().cpuShares(SandboxSpec.MAX_CPU_SHARES).build().cpuShares())
        .isEqualTo(SandboxSpec.MAX_CPU_SHARES);
    assertRefused(b -> b.cpuShares(1), "cpuShares", "0 (the engine's default) or 2 to 262144");
    assertRefused(b -> b.cpuShares(-5), "cpuShares");
    assertRefused(b -> b.cpuShares(SandboxSpec.MAX_CPU_SHARES + 1), "cpuShares");
  }

  @Test
  void rootOrNonNumericUsersAreRefused() {
    assertRefused(b -> b.user("0:0"), "user '0:0'", "non-root");
    assertRefused(b -> b.user("nobody"), "user 'nobody'", "65534:65534");
  }

  @Test
  void relativePathsAndEmptyTmpfsAreRefused() {
    assertRefused(b -> b.workdir("work"), "workdir 'work'", "absolute");
    assertRefused(b -> b.tmpfs(Map.of("tmp", 1L)), "tmpfs path 'tmp'", "absolute");
    assertRefused(b -> b.tmpfs(Map.of("/tmp", 0L)), "tmpfs size of /tmp", "positive");
  }

  @Test
  void aSeccompProfileThatIsNotAJsonObjectIsRefused() {
    assertRefused(b -> b.seccompProfileJson("unconfined"), "seccompProfileJson", "JSON");
    assertThatThrownBy(
            () ->
                SandboxSpec.builder()
                    .image("i")
                    .command("c")
                    .cpus(1)
                    .memoryBytes(1)
                    .pidsLimit(1)
                    .openFilesLimit(1)
                    .build())
        .hasMessageContainingAll("seccompProfileJson", "missing");
  }
}
