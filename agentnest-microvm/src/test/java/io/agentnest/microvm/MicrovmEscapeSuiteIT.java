package io.agentnest.microvm;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.SandboxConfig;
import io.agentnest.escapes.EscapeReport;
import io.agentnest.escapes.EscapeSuite;
import io.agentnest.escapes.ProbeResult;
import io.agentnest.spi.support.AgentNestHome;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The whole escape suite against microVM guests: the same hostile programs as on Docker, judged on
 * the host. What reaches only the guest's own kernel (which the sandbox may break: it is alone in
 * it) counts as contained, and each such probe says why.
 */
@ExtendWith(MicrovmRequired.class)
class MicrovmEscapeSuiteIT {
  @Test
  void nothingGetsThroughAGuest() {
    EscapeReport report =
        EscapeSuite.builder()
            .base(SandboxConfig.builder().runtime("microvm").build())
            .runtime("microvm")
            // Where the guests' disks and sockets live: no path under it may show in a guest.
            .engineRoots(
                List.of(AgentNestHome.dir().resolve("microvm").toAbsolutePath().toString()))
            .build()
            .run();
    System.out.println("\nescape suite on microvm:\n" + report.table(110));
    assertThat(report.results()).hasSize(EscapeSuite.probes().size());
    assertThat(report.failures())
        .as(
            "probes that got through or broke on microvm:\n%s",
            new EscapeReport(report.failures()).table(400))
        .isEmpty();
    for (ProbeResult r : report.results()) {
      assertThat(r.backend()).isEqualTo("microvm");
    }
  }
}
