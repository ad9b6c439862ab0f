package io.agentnest.mcp;

import io.agentnest.tools.SandboxTools;
import io.agentnest.tools.ToolOutput;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import io.modelcontextprotocol.spec.McpSchema.Content;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.jspecify.annotations.Nullable;

/** Turns {@link ToolOutput}s into MCP tool results: text, image content, embedded resources. */
final class ToolOutputs {
  private ToolOutputs() {}

  /** A tool output with the sandbox it came from (for resource URIs). */
  record Located(ToolOutput output, String sandboxId) {}

  static ToolOutput ok(String text) {
    return new ToolOutput(text, List.of(), false);
  }

  static ToolOutput error(String text) {
    return new ToolOutput(text, List.of(), true);
  }

  static CallToolResult toResult(ToolOutput out, @Nullable String sandboxId) {
    List<Content> content = new ArrayList<>();
    content.add(new McpSchema.TextContent(out.text()));
    for (ToolOutput.Attachment a : out.attachments()) {
      switch (a.kind()) {
        case IMAGE:
          content.add(
              new McpSchema.ImageContent(
                  null, Base64.getEncoder().encodeToString(a.data()), a.mimeType()));
          break;
        case TEXT:
          String text = new String(a.data(), StandardCharsets.UTF_8);
          content.add(new McpSchema.TextContent(SandboxTools.bound(text, 40_000)));
          break;
        case BLOB:
          content.add(
              new McpSchema.EmbeddedResource(
                  null,
                  new McpSchema.BlobResourceContents(
                      uri(sandboxId, a.name()),
                      a.mimeType(),
                      Base64.getEncoder().encodeToString(a.data()))));
          break;
      }
    }
    return CallToolResult.builder().content(content).isError(out.isError()).build();
  }

  private static String uri(@Nullable String sandboxId, String name) {
    String id = sandboxId == null ? "sandbox" : sandboxId;
    return "agentnest://"
        + id
        + "/"
        + URLEncoder.encode(name, StandardCharsets.UTF_8).replace("+", "%20");
  }
}
