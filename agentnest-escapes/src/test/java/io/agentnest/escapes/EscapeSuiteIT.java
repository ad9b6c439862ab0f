package io.agentnest.escapes;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.SandboxConfig;
import io.agentnest.config.Preset;
import io.agentnest.config.Presets;
import io.agentnest.docker.BaseImageBuilder;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.docker.GvisorRequired;
import io.agentnest.docker.internal.DockerEngine;
import io.agentnest.docker.internal.RunscRegistration;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The whole escape suite against the real engine, on runc and on gVisor. Prints the table and fails
 * on any probe that got through or could not tell.
 */
@ExtendWith(DockerEngineRequired.class)
class EscapeSuiteIT {
  static EscapeReport runOn(String runtime) {
    EscapeReport report = EscapeSuite.builder().runtime(runtime).build().run();
    System.out.println("\nescape suite on " + runtime + ":\n" + report.table(110));
    return report;
  }

  static void assertNothingGotThrough(EscapeReport report, String runtime) {
    assertThat(report.results()).hasSize(EscapeSuite.probes().size());
    assertThat(report.failures())
        .as(
            "probes that got through or broke on " + runtime + ":\n%s",
            new EscapeReport(report.failures()).table(400))
        .isEmpty();
  }

  /** Probes that gVisor contains on its own and the profile refuses with runsc --oci-seccomp. */
  static final Set<String> SECCOMP_IN_SENTRY =
      Set.of(
          "namespaces.unshare",
          "devices.kmsg",
          "kernel.perf-event-open",
          "kernel.io-uring",
          "kernel.open-by-handle-at",
          "network.packet-sockets");

  @Test
  void nothingGetsThroughOnRunc() {
    EscapeReport report = runOn("runc");
    assertNothingGotThrough(report, "runc");
    // runc runs the host kernel: nothing may be excused as contained in a user-space kernel.
    assertThat(report.counts()).doesNotContainKey(Outcome.CONTAINED);
  }

  @Nested
  @ExtendWith(GvisorRequired.class)
  class OnGvisor {
    @Test
    void nothingGetsThroughOnGvisor() {
      EscapeReport report = runOn("gvisor");
      assertNothingGotThrough(report, "gvisor");
      // Every contained result names its reason.
      for (ProbeResult r : report.results()) {
        if (r.outcome() == Outcome.CONTAINED) {
          assertThat(r.detail()).as(r.probe()).contains("gVisor");
        }
      }
      assertThat(report.results()).allMatch(r -> r.backend().equals("runsc"));
      if (RunscRegistration.of(DockerEngine.connect().info())
          .map(RunscRegistration::appliesOciSeccomp)
          .orElse(false)) {
        // The profile applies inside the Sentry: these are refused there, not merely contained.
        assertThat(report.results())
            .filteredOn(r -> SECCOMP_IN_SENTRY.contains(r.probe()))
            .hasSize(SECCOMP_IN_SENTRY.size())
            .allMatch(r -> r.outcome() == Outcome.BLOCKED, "BLOCKED");
      }
    }
  }

  @Test
  void oneCategoryCanBeRunAlone() {
    EscapeReport report =
        EscapeSuite.builder().only(List.of("privilege", "kernel.bpf")).build().run();
    assertThat(report.results())
        .extracting(ProbeResult::probe)
        .allMatch(p -> p.startsWith("privilege.") || p.equals("kernel.bpf"))
        .contains("kernel.bpf", "privilege.capabilities");
    assertThat(report.passed()).isTrue();
  }

  /** Issue 42 (20): the secret probes alone, the hex dumps among them, leak nothing. */
  @Test
  void theSecretProbesAloneIncludingHexDumpsLeakNothing() {
    EscapeReport report = EscapeSuite.builder().only(List.of("secrets")).build().run();
    assertThat(report.results())
        .extracting(ProbeResult::probe)
        .contains("secrets.hex-dumps")
        .allMatch(p -> p.startsWith("secrets."));
    assertThat(report.results())
        .allSatisfy(r -> assertThat(r.outcome()).as(r.toString()).isEqualTo(Outcome.BLOCKED));
  }

  /** An image with git (the base image has none), built offline once and kept. */
  static final String GIT_IMAGE = "agentnest-test/escapes-git:1";

  /**
   * Issue 42 (1, 19): on an image with git, sandbox code's traps (shown to fire for its own git)
   * run nothing when the host commits, diffs, fetches and pushes, and the token is nowhere inside.
   */
  @Test
  void theGitProbesOnAnImageWithGitRunNothingTheRepositoryNames() {
    if (!BaseImageBuilder.exists(GIT_IMAGE)) {
      boolean mmdebstrap =
          Arrays.stream(System.getenv().getOrDefault("PATH", "").split(":"))
              .anyMatch(d -> Files.isExecutable(Path.of(d, "mmdebstrap")));
      if (!mmdebstrap) {
        DockerEngineRequired.missing("mmdebstrap", "it builds " + GIT_IMAGE + " with git");
      }
      BaseImageBuilder.build(GIT_IMAGE, List.of("git"), "bookworm", n -> {});
    }
    EscapeReport report =
        EscapeSuite.builder()
            .base(SandboxConfig.builder().image(GIT_IMAGE).build())
            .only(List.of("git"))
            .build()
            .run();
    System.out.println("\ngit probes on " + GIT_IMAGE + ":\n" + report.table(200));
    assertThat(report.results())
        .extracting(ProbeResult::probe)
        .containsExactly("git.repository-programs", "git.credentialed-remote");
    assertThat(report.results())
        .allSatisfy(
            r -> {
              assertThat(r.outcome()).as(r.toString()).isEqualTo(Outcome.BLOCKED);
              assertThat(r.detail()).as(r.toString()).doesNotContain("has no git");
            });
  }

  /**
   * Issue 42 (4): on the browser preset's image, sandbox code that takes Chromium's DevTools port
   * first (stopping Chromium until it holds it) is refused as an impostor: the host never connects
   * to it and hands out no browser.
   */
  @Test
  void theBrowserProbeOnTheBrowserImageFindsTheImpostorRefused() {
    Preset browser = Presets.get("browser");
    if (!BaseImageBuilder.exists(browser.image())) {
      BaseImageBuilder.buildPreset(browser, List.of(), "bookworm", n -> {});
    }
    EscapeReport report =
        EscapeSuite.builder()
            .base(SandboxConfig.builder().image(browser.image()).build())
            .only(List.of("browser"))
            .build()
            .run();
    System.out.println("\nbrowser probe on " + browser.image() + ":\n" + report.table(200));
    assertThat(report.results())
        .extracting(ProbeResult::probe)
        .containsExactly("browser.devtools-preemption");
    assertThat(report.results())
        .allSatisfy(
            r -> {
              assertThat(r.outcome()).as(r.toString()).isEqualTo(Outcome.BLOCKED);
              assertThat(r.detail())
                  .as(r.toString())
                  .contains(
                      "impostor held port",
                      "refused as an impostor, the host never connected to it",
                      "once the impostor was gone, sb.browser() started",
                      "another process in the sandbox listens on the browser's DevTools");
            });
  }
}
