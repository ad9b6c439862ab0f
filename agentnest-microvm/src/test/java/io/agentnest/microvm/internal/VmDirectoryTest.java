package io.agentnest.microvm.internal;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class VmDirectoryTest {
  @Test
  void anIdThatIsNotHexNeverBecomesAPath() {
    for (String bad : new String[] {"../etc", "0123/../../x", "ABCDEF0123456789", "", "abc"}) {
      assertThatThrownBy(() -> VmDirectory.of(bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("is not a microVM sandbox id");
    }
  }
}
