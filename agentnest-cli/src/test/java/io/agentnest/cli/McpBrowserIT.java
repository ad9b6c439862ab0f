package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.config.Preset;
import io.agentnest.config.Presets;
import io.agentnest.docker.BaseImageBuilder;
import io.agentnest.docker.DockerEngineRequired;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The browser tools of {@code agentnest mcp --preset browser}, called by the MCP Inspector's CLI
 * (one session per call): a page's text, and a screenshot as image content.
 */
@ExtendWith(DockerEngineRequired.class)
class McpBrowserIT {
  private static final ObjectMapper JSON = new ObjectMapper();

  @BeforeAll
  static void image() {
    Preset p = Presets.get("browser");
    if (!BaseImageBuilder.exists(p.image())) {
      BaseImageBuilder.buildPreset(p, List.of(), "bookworm", n -> {});
    }
  }

  private static JsonNode call(String tool, String... args) throws Exception {
    Path node = NodeTooling.dir();
    List<String> cmd = new ArrayList<>(List.of("npx", "@modelcontextprotocol/inspector", "--cli"));
    cmd.addAll(Processes.cli("mcp", "--preset", "browser"));
    cmd.addAll(List.of("--method", "tools/call", "--tool-name", tool));
    for (String a : args) {
      cmd.addAll(List.of("--tool-arg", a));
    }
    Processes.Run run = Processes.run(cmd, node, 180);
    assertThat(run.exit()).as(run.err()).isZero();
    return JSON.readTree(run.out());
  }

  @Test
  void browserOpenReturnsThePageTextAndBrowserScreenshotAPng() throws Exception {
    JsonNode opened =
        call("browser_open", "url=data:text/html,<h1>Hello from MCP</h1><p>second line</p>");
    assertThat(McpStdioIT.isError(opened)).as(opened.toString()).isFalse();
    assertThat(McpStdioIT.text(opened)).contains("Hello from MCP", "second line");

    JsonNode shot = call("browser_screenshot");
    assertThat(McpStdioIT.isError(shot)).as(shot.toString()).isFalse();
    JsonNode image = null;
    for (JsonNode c : shot.path("content")) {
      if (c.path("type").asText().equals("image")) {
        image = c;
      }
    }
    assertThat(image).as(shot.toString()).isNotNull();
    assertThat(image.path("mimeType").asText()).isEqualTo("image/png");
    BufferedImage png =
        ImageIO.read(
            new ByteArrayInputStream(Base64.getDecoder().decode(image.path("data").asText())));
    assertThat(png.getWidth()).isEqualTo(1280);
    assertThat(png.getHeight()).isEqualTo(800);
  }
}
