package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.config.Preset;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.time.Duration;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The data and browser presets' images build offline (once; reused while present) and their
 * sandboxes, under the normal hardening, import and run what the preset promises.
 */
@ExtendWith(DockerEngineRequired.class)
class PresetsIT {
  @Test
  void theDataPresetPlotsWithPandasAndMatplotlibToAPng() throws Exception {
    Preset p = PresetImages.ensure("data");
    try (Sandbox sb = Sandbox.create(SandboxConfig.preset("data").build())) {
      assertThat(sb.config().image()).isEqualTo(p.image()).isEqualTo("agentnest/python:data");
      ExecResult r =
          sb.runCode(
              "import numpy as np, pandas as pd, scipy.stats, matplotlib\n"
                  + "import matplotlib.pyplot as plt\n"
                  + "df = pd.DataFrame({'x': np.arange(10), 'y': np.arange(10) ** 2})\n"
                  + "ax = df.plot(x='x', y='y', color='red', linewidth=8, legend=False)\n"
                  + "ax.figure.set_size_inches(4, 3)\n"
                  + "ax.figure.savefig('plot.png', dpi=50)\n"
                  + "print(matplotlib.get_backend(), round(scipy.stats.norm.cdf(0), 2),"
                  + " int(df.y.sum()))\n",
              ExecOptions.builder().timeout(Duration.ofMinutes(2)).build());
      assertThat(r.exitCode()).as(r.stderr()).isZero();
      assertThat(r.stdout().strip()).isEqualToIgnoringCase("agg 0.5 285");
      BufferedImage png = ImageIO.read(new ByteArrayInputStream(sb.files().read("plot.png")));
      assertThat(png.getWidth()).isEqualTo(200);
      assertThat(png.getHeight()).isEqualTo(150);
      boolean red = false;
      for (int x = 0; x < png.getWidth() && !red; x++) {
        for (int y = 0; y < png.getHeight() && !red; y++) {
          int rgb = png.getRGB(x, y);
          red = ((rgb >> 16) & 0xff) > 200 && ((rgb >> 8) & 0xff) < 60 && (rgb & 0xff) < 60;
        }
      }
      assertThat(red).as("the red line is drawn").isTrue();
      ExecResult git = sb.exec("git --version");
      assertThat(git.stdout()).startsWith("git version");
    }
  }

  @Test
  void theBrowserPresetHasAHeadlessChromiumAndGit() {
    PresetImages.ensure("browser");
    try (Sandbox sb = Sandbox.create(SandboxConfig.preset("browser").build())) {
      ExecResult r = sb.exec("chromium --version && git --version && fc-list | wc -l");
      assertThat(r.exitCode()).as(r.stderr()).isZero();
      assertThat(r.stdout()).contains("Chromium").contains("git version");
      assertThat(Integer.parseInt(r.stdout().strip().lines().reduce((a, b) -> b).orElse("0")))
          .isPositive();
    }
  }
}
