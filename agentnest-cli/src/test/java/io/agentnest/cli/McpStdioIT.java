package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.Sandbox;
import io.agentnest.SandboxInfo;
import io.agentnest.docker.DockerEngineRequired;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code agentnest mcp} over stdio, driven by MCP clients nobody here wrote: the official
 * TypeScript SDK client and the MCP Inspector's CLI, against the real engine.
 */
@ExtendWith(DockerEngineRequired.class)
class McpStdioIT {
  private static final ObjectMapper JSON = new ObjectMapper();

  static String text(JsonNode result) {
    StringBuilder sb = new StringBuilder();
    for (JsonNode c : result.path("content")) {
      if (c.path("type").asText().equals("text")) {
        sb.append(c.path("text").asText());
      }
    }
    return sb.toString();
  }

  static boolean isError(JsonNode result) {
    return result.path("isError").asBoolean(false);
  }

  @Test
  void typeScriptSdkClientUsesEveryTool(@TempDir Path tmp) throws Exception {
    Path node = NodeTooling.dir();
    // The secret's value comes from a file: on the command line every local user could read it.
    Path secretFile = tmp.resolve("it-secret");
    Files.writeString(secretFile, "correct-horse-battery-staple-42\n");
    Path config = tmp.resolve("agentnest.yaml");
    Files.writeString(
        config,
        "defaults:\n"
            + "  network:\n"
            + "    mode: allowlist\n"
            + "    allow: \"allowed.invalid\"\n"
            + "    allow_addresses: \"127.0.0.1, ::1\"\n"
            + "    on_unknown_host: ask\n"
            + "    approval_timeout: 60s\n");
    List<String> cmd =
        new ArrayList<>(
            List.of(
                "node",
                "stdio-client.mjs",
                Processes.java(),
                Processes.jar().toString(),
                "--config",
                config.toString(),
                "--timeout",
                "4s",
                "--secret-file",
                "IT_SECRET=" + secretFile));
    long t0 = System.nanoTime();
    Processes.Run run = Processes.run(cmd, node, 400);
    System.err.printf("stdio client run: %.1f s%n", (System.nanoTime() - t0) / 1e9);
    assertThat(run.exit()).as("client exit; stderr:\n" + run.err()).isZero();
    JsonNode out = JSON.readTree(run.out().strip());

    List<String> names = new ArrayList<>();
    out.path("tools").forEach(t -> names.add(t.path("name").asText()));
    assertThat(names)
        .contains(
            "run_python",
            "run_shell",
            "write_file",
            "read_file",
            "list_files",
            "export_artifact",
            "create_sandbox",
            "list_sandboxes",
            "destroy_sandbox",
            "fork_sandbox",
            "browser_open",
            "browser_screenshot",
            "browser_text",
            "git_clone",
            "git_diff",
            "git_commit");
    JsonNode runPython =
        StreamSupport.stream(out.path("tools").spliterator(), false)
            .filter(t -> t.path("name").asText().equals("run_python"))
            .findFirst()
            .orElseThrow();
    assertThat(runPython.path("description").asText()).contains("persistent");
    assertThat(runPython.at("/inputSchema/required/0").asText()).isEqualTo("code");
    assertThat(runPython.at("/inputSchema/properties/code/type").asText()).isEqualTo("string");

    // Python state persists across calls.
    assertThat(text(out.path("py1"))).contains("x is set");
    assertThat(isError(out.path("py2"))).isFalse();
    assertThat(text(out.path("py2"))).contains("[result]\n42");

    // Shell: runs as nobody, a non-zero exit is a tool error with the exit code.
    assertThat(text(out.path("shell"))).contains("[exit code 3]", "hello", "65534");
    assertThat(isError(out.path("shell"))).isTrue();

    // Files.
    assertThat(text(out.path("write"))).contains("wrote 13 bytes to notes/a.txt");
    assertThat(text(out.path("read"))).isEqualTo("héllo\nworld\n");
    assertThat(text(out.path("list"))).contains("dir\t-\tnotes/", "file\t13\tnotes/a.txt");

    // Rich output comes back as image content.
    JsonNode image = out.path("image").path("content");
    JsonNode img =
        StreamSupport.stream(image.spliterator(), false)
            .filter(c -> c.path("type").asText().equals("image"))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no image content in " + image));
    assertThat(img.path("mimeType").asText()).isEqualTo("image/png");
    byte[] png = Base64.getDecoder().decode(img.path("data").asText());
    assertThat(png).startsWith(0x89, 'P', 'N', 'G');

    // Artifacts: image as image content, text as text, binary as an embedded blob resource.
    JsonNode exported = out.path("exportImage").path("content");
    assertThat(exported.get(1).path("type").asText()).isEqualTo("image");
    assertThat(Base64.getDecoder().decode(exported.get(1).path("data").asText())).isEqualTo(png);
    assertThat(text(out.path("exportImage"))).contains("sha256 ");
    assertThat(out.at("/exportText/content/1/text").asText()).isEqualTo("héllo\nworld\n");
    JsonNode blob = out.at("/exportBlob/content/1");
    assertThat(blob.path("type").asText()).isEqualTo("resource");
    assertThat(blob.at("/resource/mimeType").asText()).isEqualTo("application/octet-stream");
    assertThat(Base64.getDecoder().decode(blob.at("/resource/blob").asText())).hasSize(3000);

    // Errors are tool errors a model can act on.
    assertThat(isError(out.path("pyError"))).isTrue();
    assertThat(text(out.path("pyError")))
        .contains("[error] ZeroDivisionError: division by zero", "return 1/0");
    assertThat(isError(out.path("badPath"))).isTrue();
    assertThat(text(out.path("badPath"))).contains("BAD_PATH");
    assertThat(isError(out.path("missingArg"))).isTrue();
    assertThat(text(out.path("missingArg"))).contains("required property 'command' not found");

    // Policy as for the Java API: secrets masked, the configured time limit cannot be raised.
    assertThat(text(out.path("secret")))
        .contains("[REDACTED:IT_SECRET]")
        .doesNotContain("correct-horse");
    assertThat(isError(out.path("timeout"))).isTrue();
    assertThat(text(out.path("timeout"))).contains("[limit] TIMEOUT");
    assertThat(text(out.path("afterTimeout"))).contains("[result]\n41");

    // Long runs report progress.
    assertThat(text(out.path("progressRun"))).contains("step 5");
    assertThat(out.path("progress").size()).as("progress notifications").isGreaterThanOrEqualTo(2);
    assertThat(out.path("progress").toString()).contains("step");

    // More sandboxes: isolated from the default one, destroyed on request.
    String createdId = out.path("createdId").asText();
    assertThat(createdId).isNotBlank();
    assertThat(text(out.path("isolated"))).contains("NameError");
    assertThat(text(out.path("listSandboxes"))).contains(createdId, "default");
    assertThat(text(out.path("destroyed"))).contains("destroyed sandbox " + createdId);
    assertThat(isError(out.path("unknownSandbox"))).isTrue();
    assertThat(text(out.path("unknownSandbox"))).contains("no sandbox", "list_sandboxes");
    assertThat(text(out.path("listAfter"))).doesNotContain(createdId);
    assertThat(text(out.path("forked"))).contains("forked into sandbox", "state carried by");
    assertThat(text(out.path("forkSees"))).contains("42");
    assertThat(text(out.path("parentKeeps"))).contains("41");
    assertThat(text(out.path("forkDestroyed"))).contains("destroyed sandbox");

    // Network approval through MCP elicitation: the first asked host is approved, the next
    // declined (a 403 from the egress proxy); an answer holds for its host for the session.
    assertThat(out.path("elicitations").size()).isEqualTo(2);
    assertThat(out.at("/elicitations/0/message").asText()).contains("localhost");
    assertThat(text(out.path("approved"))).contains("hello from the host /approved");
    assertThat(text(out.path("declined"))).contains("[result]\n403");
    assertThat(text(out.path("approvedAgain"))).contains("hello from the host /again");

    // The session ended with the client: no sandbox of it is left.
    String defaultId =
        text(out.path("listSandboxes"))
            .lines()
            .filter(l -> l.contains("\tdefault\t"))
            .map(l -> l.substring(0, l.indexOf('\t')))
            .findFirst()
            .orElseThrow();
    List<String> left = new ArrayList<>();
    for (SandboxInfo info : Sandbox.list()) {
      left.add(info.id());
    }
    assertThat(left).doesNotContain(defaultId, createdId);
  }

  @Test
  void inspectorCliListsAndCallsTools() throws Exception {
    Path node = NodeTooling.dir();
    List<String> base = new ArrayList<>(List.of("npx", "@modelcontextprotocol/inspector", "--cli"));
    base.addAll(Processes.cli("mcp"));
    List<String> list = new ArrayList<>(base);
    list.addAll(List.of("--method", "tools/list"));
    Processes.Run tools = Processes.run(list, node, 180);
    assertThat(tools.exit()).as(tools.err()).isZero();
    JsonNode listed = JSON.readTree(tools.out());
    List<String> names = new ArrayList<>();
    listed.path("tools").forEach(t -> names.add(t.path("name").asText()));
    assertThat(names).contains("run_python", "run_shell", "export_artifact");

    List<String> call = new ArrayList<>(base);
    call.addAll(
        List.of(
            "--method",
            "tools/call",
            "--tool-name",
            "run_python",
            "--tool-arg",
            "code=import sys; print(6 * 7); sys.version_info[0]"));
    Processes.Run called = Processes.run(call, node, 180);
    assertThat(called.exit()).as(called.err()).isZero();
    JsonNode result = JSON.readTree(called.out());
    assertThat(isError(result)).isFalse();
    assertThat(text(result)).contains("[stdout]\n42", "[result]\n3");

    List<String> fail = new ArrayList<>(base);
    fail.addAll(
        List.of(
            "--method",
            "tools/call",
            "--tool-name",
            "read_file",
            "--tool-arg",
            "path=does/not/exist.txt"));
    Processes.Run failed = Processes.run(fail, node, 180);
    JsonNode error = JSON.readTree(failed.out());
    assertThat(isError(error)).as(failed.out() + failed.err()).isTrue();
    assertThat(text(error)).contains("NOT_FOUND");
  }
}
