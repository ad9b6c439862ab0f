package io.agentnest.mcp;

import io.agentnest.Browser;
import io.agentnest.Sandbox;
import io.agentnest.tools.SandboxTools;
import io.agentnest.tools.ToolOutput;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * {@code browser_open}, {@code browser_screenshot}, {@code browser_text}: one headless Chromium per
 * sandbox ({@link Sandbox#browser()}), started on first use; the sandbox needs an image with
 * Chromium (the browser preset) and a network policy that allows the pages.
 */
final class McpBrowserTools {
  private static final int MAX_TEXT = 40_000;
  private final Map<String, Open> browsers = new ConcurrentHashMap<>();

  private record Open(Sandbox sandbox, Browser browser) {}

  List<SyncToolSpecification> all(McpTools t) {
    return List.of(
        McpTools.tool(
            "browser_open",
            "Open a web page",
            "Load a URL in a headless Chromium inside the sandbox (started on first use; the"
                + " sandbox needs the browser preset). Every page load goes through the sandbox's"
                + " network allowlist. Returns the page's visible text.",
            McpTools.schema(
                List.of("url"),
                McpTools.prop("url", "string", "The page, e.g. \"https://example.com/\"."),
                McpTools.sandboxIdProp()),
            McpTools.annotations(false, false, true),
            (ex, req) ->
                t.simple(
                    ex,
                    a -> {
                      String url = McpArguments.string(a, "url");
                      Browser b =
                          browser(t.session(ex).sandbox(McpArguments.optString(a, "sandbox_id")));
                      b.open(url);
                      return ToolOutputs.ok(
                          "loaded " + url + "\n\n" + SandboxTools.bound(b.text(), MAX_TEXT));
                    },
                    req)),
        McpTools.tool(
            "browser_screenshot",
            "Screenshot of the page",
            "A PNG of the page browser_open loaded (1280x800 viewport).",
            McpTools.schema(List.of(), McpTools.sandboxIdProp()),
            McpTools.annotations(true, false, true),
            (ex, req) ->
                t.simple(
                    ex,
                    a -> {
                      byte[] png =
                          browser(t.session(ex).sandbox(McpArguments.optString(a, "sandbox_id")))
                              .screenshot();
                      return new ToolOutput(
                          "screenshot of the current page (" + png.length + " bytes, PNG)",
                          List.of(
                              new ToolOutput.Attachment(
                                  "screenshot.png", "image/png", ToolOutput.Kind.IMAGE, png)),
                          false);
                    },
                    req)),
        McpTools.tool(
            "browser_text",
            "Text of the page",
            "The visible text of the page browser_open loaded.",
            McpTools.schema(List.of(), McpTools.sandboxIdProp()),
            McpTools.annotations(true, false, true),
            (ex, req) ->
                t.simple(
                    ex,
                    a ->
                        ToolOutputs.ok(
                            SandboxTools.bound(
                                browser(
                                        t.session(ex)
                                            .sandbox(McpArguments.optString(a, "sandbox_id")))
                                    .text(),
                                MAX_TEXT)),
                    req)));
  }

  /** The sandbox's browser, started on first use (again if its sandbox was replaced). */
  private Browser browser(Sandbox sb) {
    // A destroyed sandbox took its browser with it: forget it.
    browsers.values().removeIf(o -> !o.sandbox().isAlive());
    return browsers.computeIfAbsent(sb.id(), id -> new Open(sb, sb.browser())).browser();
  }
}
