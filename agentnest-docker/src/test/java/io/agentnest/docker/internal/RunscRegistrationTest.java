package io.agentnest.docker.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.spi.HealthCheck.Status;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

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
}
