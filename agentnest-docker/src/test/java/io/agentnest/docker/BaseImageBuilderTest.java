package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class BaseImageBuilderTest {
  @Test
  void theEnginesImportAnswerIsShownAsAShortImageIdNotRawJson() {
    assertThat(
            BaseImageBuilder.shown(
                "{\"status\":\"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}"))
        .isEqualTo("image sha256:0123456789ab");
    assertThat(BaseImageBuilder.shown("  something else  ")).isEqualTo("something else");
  }
}
