package io.agentnest.microvm.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ConfigException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class MicrovmSettingsTest {
  @Test
  void aBadAcceleratorOrTimeoutIsRefusedWithTheFix() {
    try {
      System.setProperty("agentnest.microvm.accel", "hvf");
      assertThatThrownBy(MicrovmSettings::fromEnvironment)
          .isInstanceOf(ConfigException.class)
          .hasMessageContaining("AGENTNEST_MICROVM_ACCEL='hvf'", "auto (the default), kvm or tcg");
      System.setProperty("agentnest.microvm.accel", "tcg");
      System.setProperty("agentnest.microvm.bootTimeout", "soon");
      assertThatThrownBy(MicrovmSettings::fromEnvironment)
          .isInstanceOf(ConfigException.class)
          .hasMessageContaining("is not a number of seconds");
      System.setProperty("agentnest.microvm.bootTimeout", "30");
      MicrovmSettings s = MicrovmSettings.fromEnvironment();
      assertThat(s.accel()).isEqualTo("tcg");
      assertThat(s.bootTimeout("tcg")).isEqualTo(Duration.ofSeconds(30));
    } finally {
      System.clearProperty("agentnest.microvm.accel");
      System.clearProperty("agentnest.microvm.bootTimeout");
    }
  }

  @Test
  void theBootTimeoutIsGenerousUnderEmulation() {
    MicrovmSettings s = new MicrovmSettings("auto", null, "qemu-system-x86_64");
    assertThat(s.bootTimeout("tcg")).isGreaterThan(s.bootTimeout("kvm"));
  }
}
