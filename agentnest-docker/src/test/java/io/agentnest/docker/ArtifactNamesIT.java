package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.FileOperationException;
import io.agentnest.Sandbox;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A file whose name holds a newline (or another control character) is refused by an export with an
 * error that shows the name escaped, never silently left out (issue 27).
 */
@ExtendWith(DockerEngineRequired.class)
class ArtifactNamesIT {
  static Sandbox sb;
  @TempDir Path host;

  @BeforeAll
  static void start() {
    sb = Sandbox.create();
    sb.runCode(
        "import os\nos.makedirs('output/deep', exist_ok=True)\n"
            + "open('output/ok.png', 'wb').write(b'ok')\n"
            + "open('output/deep/bad\\nname.png', 'wb').write(b'bad')\n");
  }

  @AfterAll
  static void stop() {
    if (sb != null) {
      sb.destroy();
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"output/**.png", "output/**", "**/*.png", "output/deep/*"})
  void aMatchingNameWithANewlineIsRefusedNotLeftOut(String glob) throws Exception {
    assertThatThrownBy(() -> sb.exportArtifacts(glob, host))
        .isInstanceOf(FileOperationException.class)
        .hasMessageContaining("output/deep/bad\\nname.png")
        .hasMessageContaining("control character")
        .hasMessageNotContaining("\n")
        .extracting(e -> ((FileOperationException) e).code())
        .isEqualTo("BAD_PATH");
    try (Stream<Path> s = Files.list(host)) {
      assertThat(s.toList()).as("nothing written").isEmpty();
    }
    assertThatThrownBy(() -> sb.artifacts(glob)).hasMessageContaining("control character");
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"output/*.png", "output/ok.png"})
  void patternsThatDoNotMatchTheNameStillExport(String glob) {
    assertThat(sb.exportArtifacts(glob, host))
        .singleElement()
        .satisfies(a -> assertThat(a.path()).isEqualTo("output/ok.png"));
  }
}
