package io.agentnest.escapes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ConfigException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class CatalogueTest {
  @Test
  void coversEveryAreaTheIssueNamesWithAtLeastFortyProbes() {
    List<Probe> probes = EscapeSuite.probes();
    assertThat(probes).hasSizeGreaterThanOrEqualTo(40);
    assertThat(probes.stream().map(Probe::category).distinct())
        .containsExactlyInAnyOrder(
            "privilege",
            "namespaces",
            "devices",
            "kernel",
            "host-info",
            "network",
            "resources",
            "files",
            "secrets",
            "git",
            "browser");
    assertThat(probes.stream().map(Probe::id))
        .contains(
            "privilege.setuid-binaries",
            "privilege.capabilities",
            "privilege.no-new-privs",
            "namespaces.mount",
            "namespaces.unshare",
            "namespaces.setns",
            "namespaces.proc1-root",
            "namespaces.cgroup-release-agent",
            "namespaces.core-pattern",
            "namespaces.sysrq",
            "devices.kmsg",
            "devices.memory",
            "devices.mknod",
            "kernel.module-loading",
            "kernel.kexec",
            "kernel.bpf",
            "kernel.perf-event-open",
            "kernel.userfaultfd",
            "kernel.keyctl",
            "kernel.io-uring",
            "kernel.open-by-handle-at",
            "host-info.kcore",
            "host-info.kallsyms",
            "host-info.firmware-and-debugfs",
            "host-info.docker-socket",
            "host-info.environment",
            "host-info.mountinfo",
            "network.metadata-service",
            "network.host-loopback",
            "network.docker-gateway",
            "network.other-sandboxes",
            "network.raw-sockets",
            "network.packet-sockets",
            "network.ipv6",
            "network.dns-exfiltration",
            "files.traversal",
            "files.symlink-swap-race",
            "files.tar-slip",
            "secrets.environment",
            "secrets.proc1-environ",
            "secrets.encoded",
            "secrets.hex-dumps",
            "secrets.wrapped-base64",
            "secrets.split-streams",
            "secrets.rich-output",
            "git.repository-programs",
            "git.credentialed-remote",
            "browser.devtools-preemption");
    Set<String> ids = new HashSet<>();
    for (Probe p : probes) {
      assertThat(ids.add(p.id())).as("unique id " + p.id()).isTrue();
      assertThat(p.attack()).isNotBlank();
      p.harmlessOn().values().forEach(why -> assertThat(why).contains("gVisor"));
    }
  }

  @Test
  void everyProbeScriptHasACatalogueEntryAndBack() throws IOException {
    String script;
    try (InputStream in = getClass().getResourceAsStream("/io/agentnest/escapes/probes.py")) {
      script = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    Set<String> inScript = new HashSet<>();
    Matcher m = Pattern.compile("@probe\\(\"([a-z0-9.-]+)\"\\)").matcher(script);
    while (m.find()) {
      if (!m.group(1).startsWith("helper.")) {
        inScript.add(m.group(1));
      }
    }
    Set<String> catalogued = new HashSet<>();
    EscapeSuite.probes().forEach(p -> catalogued.add(p.id()));
    assertThat(catalogued).containsAll(inScript);
    // The rest are judged on the host (file API, secrets, git operations, browser, resources).
    catalogued.removeAll(inScript);
    assertThat(catalogued)
        .allMatch(
            id ->
                id.startsWith("files.")
                    || id.startsWith("secrets.")
                    || id.startsWith("git.")
                    || id.startsWith("browser.")
                    || id.startsWith("resources."));
  }

  @Test
  void unknownSelectionsAreRefusedWithTheCategories() {
    assertThatThrownBy(() -> EscapeSuite.builder().only(List.of("kernal")).build())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("no probe or category 'kernal'")
        .hasMessageContaining("privilege, namespaces");
    assertThatThrownBy(() -> EscapeSuite.builder().engineRoot("var/lib").build())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("absolute");
  }

  @Test
  void reportTableCountsAndFailures() {
    EscapeReport r =
        new EscapeReport(
            List.of(
                new ProbeResult("a.x", "a", "runc", Outcome.BLOCKED, "fine", Duration.ZERO),
                new ProbeResult(
                    "a.y", "a", "runsc", Outcome.CONTAINED, "gVisor: harmless", Duration.ZERO),
                new ProbeResult(
                    "b.z", "b", "runc", Outcome.ESCAPED, "x".repeat(300), Duration.ZERO)));
    assertThat(r.passed()).isFalse();
    assertThat(r.failures()).extracting(ProbeResult::probe).containsExactly("b.z");
    String table = r.table(40);
    assertThat(table)
        .contains("a.x", "runsc", "CONTAINED", "1 FAILED")
        .doesNotContain("x".repeat(41));
    assertThat(r.toJson()).contains("\"outcome\":\"ESCAPED\"");
    assertThat(new EscapeReport(List.of(r.results().get(0))).passed()).isTrue();
  }
}
