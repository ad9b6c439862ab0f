package io.agentnest.docker.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.internal.lifecycle.SecurityPolicy;
import io.agentnest.internal.support.Json;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class GvisorSeccompTest {
  private static List<String> actionsFor(String profile, String syscall) throws IOException {
    List<String> out = new ArrayList<>();
    for (JsonNode rule : Json.MAPPER.readTree(profile).path("syscalls")) {
      for (JsonNode n : rule.path("names")) {
        if (n.asText().equals(syscall)) {
          out.add(rule.path("action").asText() + "/" + rule.path("errnoRet").asInt(0));
        }
      }
    }
    return out;
  }

  @Test
  void underGvisorClone3GoesToTheSentryBecauseRunscAnswersEveryRefusalWithEperm()
      throws IOException {
    String profile = GvisorSeccomp.adapt(SecurityPolicy.seccompProfile(), "runsc");
    assertThat(actionsFor(profile, "clone3")).containsExactly("SCMP_ACT_ALLOW/0");
    // Everything else stays as the profile says.
    assertThat(actionsFor(profile, "io_uring_setup")).containsExactly("SCMP_ACT_ERRNO/38");
    assertThat(actionsFor(profile, "pidfd_getfd")).containsExactly("SCMP_ACT_ERRNO/38");
    assertThat(actionsFor(profile, "clone")).containsExactly("SCMP_ACT_ALLOW/0");
    assertThat(actionsFor(profile, "keyctl")).isEmpty();
  }

  @Test
  void pselect6IsAlsoAllowedUnderGvisorsOwnNameForIt() throws IOException {
    // glibc's select() is pselect6; runsc drops names its table does not have.
    String profile = GvisorSeccomp.adapt(SecurityPolicy.seccompProfile(), "runsc");
    assertThat(actionsFor(profile, "pselect")).containsExactly("SCMP_ACT_ALLOW/0");
    assertThat(actionsFor(profile, "pselect6")).containsExactly("SCMP_ACT_ALLOW/0");
  }

  @Test
  void runcAndOtherRuntimesGetTheProfileUnchanged() {
    String profile = SecurityPolicy.seccompProfile();
    assertThat(GvisorSeccomp.adapt(profile, "runc")).isSameAs(profile);
    assertThat(GvisorSeccomp.adapt(profile, null)).isSameAs(profile);
    assertThat(GvisorSeccomp.adapt(profile, "kata-runtime")).isSameAs(profile);
  }

  @Test
  void aProfileThatDoesNotRefuseClone3OrIsNotJsonIsLeftAlone() {
    String allowAll = "{\"defaultAction\":\"SCMP_ACT_ALLOW\",\"syscalls\":[]}";
    assertThat(GvisorSeccomp.adapt(allowAll, "runsc")).isSameAs(allowAll);
    assertThat(GvisorSeccomp.adapt("not json", "runsc")).isEqualTo("not json");
  }

  @Test
  void theGvisorProfileShippedForKubernetesNodesIsTheAdaptedProfile() throws IOException {
    // Node profiles are files an administrator installs (docs/kubernetes.md): the one for gVisor
    // RuntimeClasses must be exactly what adapt() makes of the profile, or pods on gVisor lose
    // threads (clone3) and select().
    String shipped;
    try (InputStream in =
        SecurityPolicy.class.getResourceAsStream(GvisorSeccomp.GVISOR_PROFILE_RESOURCE)) {
      assertThat(in).as("seccomp-gvisor.json next to seccomp.json").isNotNull();
      shipped = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertThat(Json.MAPPER.readTree(shipped))
        .isEqualTo(
            Json.MAPPER.readTree(GvisorSeccomp.adapt(SecurityPolicy.seccompProfile(), "runsc")));
  }
}
