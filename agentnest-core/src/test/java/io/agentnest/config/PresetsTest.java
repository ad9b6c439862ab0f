package io.agentnest.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ConfigException;
import io.agentnest.SandboxConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PresetsTest {
  @TempDir Path home;
  private String before;

  @BeforeEach
  void pointHome() {
    before = System.getProperty("agentnest.home");
    System.setProperty("agentnest.home", home.toString());
  }

  @AfterEach
  void restoreHome() {
    if (before == null) {
      System.clearProperty("agentnest.home");
    } else {
      System.setProperty("agentnest.home", before);
    }
  }

  @Test
  void theBuiltInPresetsLoadWithTheirImagesPackagesAndLimits() {
    Preset data = Presets.get("data");
    assertThat(data.image()).isEqualTo("agentnest/python:data");
    assertThat(data.packages())
        .containsExactly(
            "python3-numpy", "python3-pandas", "python3-matplotlib", "python3-scipy", "git");
    SandboxConfig c = SandboxConfig.preset("data").build();
    assertThat(c.env()).containsEntry("MPLBACKEND", "Agg");
    assertThat(c.memoryBytes()).isEqualTo(2L << 30);
    assertThat(c.gpus()).isZero();
    // The preset starts the sandbox; it keeps every default of the hardening.
    assertThat(c.readOnlyRootFilesystem()).isTrue();
    assertThat(c.network().isNone()).isTrue();

    assertThat(Presets.get("browser").packages()).contains("chromium", "git");
    assertThat(SandboxConfig.preset("browser").build().pidsLimit()).isEqualTo(1024);
    assertThat(SandboxConfig.preset("gpu").build().gpus()).isEqualTo(1);
    assertThat(Presets.names()).containsExactly("browser", "data", "gpu");
  }

  @Test
  void aBuilderFromAPresetChangesLikeAnyOther() {
    SandboxConfig c = SandboxConfig.preset("data").memory("1g").env("A", "1").build();
    assertThat(c.memoryBytes()).isEqualTo(1L << 30);
    assertThat(c.env()).containsEntry("A", "1").containsEntry("MPLBACKEND", "Agg");
    assertThat(c.image()).isEqualTo("agentnest/python:data");
  }

  @Test
  void anUnknownPresetNamesTheKnownOnesAndTheNearest() {
    assertThatThrownBy(() -> Presets.get("dta"))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("no preset 'dta'")
        .hasMessageContaining("did you mean 'data'")
        .hasMessageContaining("[browser, data, gpu]")
        .hasMessageContaining(home.resolve("presets/dta/profile.yaml").toString());
    assertThatThrownBy(() -> Presets.get("../etc"))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("is invalid");
  }

  @Test
  void aUserPresetIsAddedAndCanReplaceABuiltInOne() throws Exception {
    Path ml = Files.createDirectories(home.resolve("presets/ml"));
    Files.writeString(
        ml.resolve("profile.yaml"),
        "version: 1\ndefaults:\n  image: my/ml:1\n  limits:\n    memory: 3g\n");
    Files.writeString(ml.resolve("packages"), "# mine\npython3-sklearn  # the model\n\n");
    Preset p = Presets.get("ml");
    assertThat(p.image()).isEqualTo("my/ml:1");
    assertThat(p.packages()).containsExactly("python3-sklearn");
    assertThat(p.source()).isEqualTo(ml.toString());
    assertThat(Presets.names()).containsExactly("browser", "data", "gpu", "ml");

    Path data = Files.createDirectories(home.resolve("presets/data"));
    Files.writeString(data.resolve("profile.yaml"), "version: 1\ndefaults:\n  image: my/data:2\n");
    assertThat(Presets.get("data").image()).isEqualTo("my/data:2");
    assertThat(Presets.get("data").packages()).isEmpty();
  }

  @Test
  void aBrokenUserPresetIsRefusedWhereItIsNamed() throws Exception {
    Path bad = Files.createDirectories(home.resolve("presets/bad"));
    Files.writeString(
        bad.resolve("profile.yaml"), "version: 1\ndefaults:\n  limits:\n    memroy: 1g\n");
    assertThatThrownBy(() -> Presets.get("bad"))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("memroy");
    Path pk = Files.createDirectories(home.resolve("presets/pk"));
    Files.writeString(pk.resolve("profile.yaml"), "version: 1\ndefaults:\n  image: a/b:1\n");
    Files.writeString(pk.resolve("packages"), "python3-numpy\nrm -rf /\n");
    assertThatThrownBy(() -> Presets.get("pk"))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("packages:2")
        .hasMessageContaining("not a Debian package name");
  }

  @Test
  void gpusAreValidatedAndReadFromTheConfigFile() {
    assertThatThrownBy(() -> SandboxConfig.builder().gpus(-1).build())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("gpus must be in [0, 64]");
    SandboxConfig c =
        AgentNestConfig.parse("version: 1\ndefaults:\n  limits:\n    gpus: 2\n", "t.yaml")
            .sandboxConfig(null);
    assertThat(c.gpus()).isEqualTo(2);
  }
}
