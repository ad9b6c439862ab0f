package io.agentnest.docker.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.spi.HealthCheck;
import io.agentnest.spi.HealthCheck.Status;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RunscRegistrationTest {
  @Test
  void readsTheDaemonsRuntimeEntry() {
    Map<String, Object> runtimes =
        Map.of(
            "runc", Map.of("path", "runc"),
            "runsc",
                Map.of(
                    "path",
                    "/usr/bin/runsc",
                    "runtimeArgs",
                    List.of("--network=none", "--oci-seccomp")));
    RunscRegistration r = RunscRegistration.of(runtimes).orElseThrow();
    assertThat(r.path()).isEqualTo("/usr/bin/runsc");
    assertThat(r.appliesOciSeccomp()).isTrue();
    assertThat(r.check().status()).isEqualTo(Status.OK);
    assertThat(RunscRegistration.of(Map.of("runc", Map.of("path", "runc")))).isEmpty();
  }

  @Test
  void theDoctorsTwoLinesComeFromOneRunOfRunscFlags(@TempDir Path dir) throws Exception {
    Path count = dir.resolve("count");
    Path runsc = dir.resolve("runsc");
    Files.writeString(
        runsc,
        "#!/bin/sh\necho run >> '"
            + count
            + "'\nprintf -- '-platform string\\n    \\tspecifies which platform to use:"
            + " (default \"systrap\")\\n'\n");
    assertThat(runsc.toFile().setExecutable(true)).isTrue();
    // Registered without --oci-seccomp: the seccomp line needs the binary's flags too.
    List<HealthCheck> lines =
        new RunscRegistration(runsc.toString(), List.of("--network=none")).checks();
    assertThat(lines)
        .extracting(HealthCheck::name)
        .containsExactly("gVisor seccomp", "gVisor platform");
    assertThat(lines.get(0).detail()).contains("cannot apply OCI seccomp profiles");
    assertThat(lines.get(1).status()).isEqualTo(Status.OK);
    assertThat(lines.get(1).detail()).isEqualTo("systrap");
    assertThat(Files.readAllLines(count)).containsExactly("run");
  }

  @Test
  void withoutTheFlagTheDoctorWarnsAndSaysHowToReload() {
    RunscRegistration r = new RunscRegistration("/nonexistent/runsc", List.of("--network=none"));
    assertThat(r.appliesOciSeccomp()).isFalse();
    assertThat(r.check().status()).isEqualTo(Status.WARN);
    assertThat(r.check().detail()).contains("does not apply inside gVisor");
    assertThat(r.check().fix()).contains("--oci-seccomp", "kill -HUP");
  }

  @Test
  void runscTakesTheFlagWithOneOrTwoDashes() {
    assertThat(new RunscRegistration("runsc", List.of("-oci-seccomp")).appliesOciSeccomp())
        .isTrue();
    assertThat(new RunscRegistration("runsc", List.of("--oci-seccomp=true")).appliesOciSeccomp())
        .isTrue();
  }

  @Test
  void theDoctorNamesTheDefaultPlatformAndWarnsOnPtrace() {
    RunscRegistration r = new RunscRegistration("/usr/bin/runsc", List.of("--network=none"));
    // As runsc 20240729 and 20221219 print them.
    String systrap =
        "  -platform string\n    \tspecifies which platform to use: systrap (default), ptrace,"
            + " kvm. (default \"systrap\")\n  -platform_device_path string\n";
    String ptrace =
        "  -platform string\n    \tspecifies which platform to use: ptrace (default), kvm."
            + " (default \"ptrace\")\n";
    assertThat(r.platformCheck(Optional.of(systrap)).status()).isEqualTo(Status.OK);
    assertThat(r.platformCheck(Optional.of(systrap)).detail()).isEqualTo("systrap");
    HealthCheck old = r.platformCheck(Optional.of(ptrace));
    assertThat(old.status()).isEqualTo(Status.WARN);
    assertThat(old.detail()).startsWith("ptrace");
    assertThat(old.fix()).contains("bookworm-backports");
    assertThat(r.platformCheck(Optional.empty()).status()).isEqualTo(Status.WARN);
  }

  @Test
  void theDaemonsPlatformArgumentWinsOverTheDefault() {
    String systrap = "  -platform string\n    \tplatforms (default \"systrap\")\n";
    RunscRegistration r =
        new RunscRegistration("/usr/bin/runsc", List.of("--network=none", "--platform=ptrace"));
    assertThat(r.platform(Optional.of(systrap))).contains("ptrace");
    assertThat(new RunscRegistration("runsc", List.of("-platform=kvm")).platform(Optional.empty()))
        .contains("kvm");
  }
}
