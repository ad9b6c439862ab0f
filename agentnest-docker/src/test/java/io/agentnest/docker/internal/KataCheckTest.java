package io.agentnest.docker.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.spi.HealthCheck.Status;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

class KataCheckTest {
  private static final Map<String, Object> PLAIN =
      Map.of("runc", Map.of("path", "runc"), "runsc", Map.of("path", "/usr/bin/runsc"));

  @Test
  void aRegisteredKataRuntimeIsFoundByNameOrByPath() {
    var byName = KataCheck.of(Map.of("kata", Map.of("path", "/opt/x/runtime")), p -> false);
    assertThat(byName.status()).isEqualTo(Status.OK);
    assertThat(byName.detail()).contains("registered as 'kata'", "--runtime kata");
    var byPath =
        KataCheck.of(Map.of("vm", Map.of("path", "/opt/kata/bin/kata-runtime")), p -> false);
    assertThat(byPath.detail()).contains("registered as 'vm'", "--runtime vm");
  }

  @Test
  void anInstalledButUnregisteredKataIsAWarningWithTheSnippet() {
    var c = KataCheck.of(PLAIN, p -> p.equals(Path.of("/opt/kata/bin/kata-runtime")));
    assertThat(c.status()).isEqualTo(Status.WARN);
    assertThat(c.fix())
        .contains("{\"runtimes\":{\"kata\":{\"path\":\"/opt/kata/bin/kata-runtime\"}}}");
  }

  @Test
  void noKataAnywhereIsFineAndSaysWhatElseGivesAVm() {
    var c = KataCheck.of(PLAIN, p -> false);
    assertThat(c.status()).isEqualTo(Status.OK);
    assertThat(c.detail()).contains("not installed", "microvm");
  }
}
