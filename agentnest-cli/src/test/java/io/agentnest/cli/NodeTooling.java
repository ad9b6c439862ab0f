package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.tck.NodePackages;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Node.js and the real MCP clients from npm ({@code @modelcontextprotocol/sdk}, {@code
 * @modelcontextprotocol/inspector}), installed once into a cache directory (idempotent). Without
 * node or npm the tests skip visibly; under {@code CI=true} they fail.
 */
final class NodeTooling {
  /** Pinned versions that run on Node 20 (inspector 0.16+ asks for Node 22). */
  static final String SDK = "@modelcontextprotocol/sdk@1.32.2";

  static final String INSPECTOR = "@modelcontextprotocol/inspector@0.15.0";

  private static Path dir;

  private NodeTooling() {}

  /** The directory with node_modules and the test scripts; installs on first use. */
  static synchronized Path dir() throws IOException {
    if (dir != null) {
      return dir;
    }
    Path d = NodePackages.install("it-node-mcp", List.of(SDK, INSPECTOR));
    for (String script : List.of("stdio-client.mjs", "http-client.mjs")) {
      try (InputStream in = NodeTooling.class.getResourceAsStream("/mcp/" + script)) {
        assertThat(in).as("test resource /mcp/" + script).isNotNull();
        Files.write(d.resolve(script), in.readAllBytes());
      }
    }
    dir = d;
    return d;
  }
}
