package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.docker.DockerEngineRequired;
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
  static synchronized Path dir() throws IOException, InterruptedException {
    if (dir != null) {
      return dir;
    }
    String problem = null;
    if (Processes.run(List.of("node", "--version"), Path.of("."), 30).exit() != 0) {
      problem = "node is not on PATH (install Node.js 20+: apt-get install nodejs npm)";
    } else if (Processes.run(List.of("npm", "--version"), Path.of("."), 30).exit() != 0) {
      problem = "npm is not on PATH (apt-get install npm)";
    }
    if (problem != null) {
      missing(problem);
    }
    String cache = System.getenv("AGENTNEST_IT_NODE_DIR");
    Path d =
        cache != null
            ? Path.of(cache)
            : Path.of(System.getProperty("user.home"), ".cache", "agentnest", "it-node-mcp");
    Files.createDirectories(d);
    boolean present =
        installed(d, "@modelcontextprotocol/sdk", SDK)
            && installed(d, "@modelcontextprotocol/inspector", INSPECTOR);
    if (!present) {
      Files.writeString(
          d.resolve("package.json"),
          "{\"name\":\"agentnest-it-mcp\",\"private\":true,\"type\":\"module\"}\n");
      System.err.println("installing " + SDK + " and " + INSPECTOR + " into " + d + " ...");
      Processes.Run r =
          Processes.run(
              List.of(
                  "npm",
                  "install",
                  "--no-audit",
                  "--no-fund",
                  "--loglevel=error",
                  "--save-exact",
                  SDK,
                  INSPECTOR),
              d,
              600);
      if (r.exit() != 0) {
        missing("npm install failed (is the npm registry reachable?): " + r.out() + r.err());
      }
    }
    for (String script : List.of("stdio-client.mjs", "http-client.mjs")) {
      try (InputStream in = NodeTooling.class.getResourceAsStream("/mcp/" + script)) {
        assertThat(in).as("test resource /mcp/" + script).isNotNull();
        Files.write(d.resolve(script), in.readAllBytes());
      }
    }
    dir = d;
    return d;
  }

  private static boolean installed(Path d, String name, String spec) throws IOException {
    Path pkg = d.resolve("node_modules").resolve(name).resolve("package.json");
    if (!Files.isRegularFile(pkg)) {
      return false;
    }
    String version = spec.substring(spec.lastIndexOf('@') + 1);
    return Files.readString(pkg).contains("\"version\": \"" + version + "\"");
  }

  static void missing(String problem) {
    DockerEngineRequired.missing("the Node.js MCP test clients", problem);
  }
}
