package io.agentnest.tck;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Real client packages from the npm registry for tests that drive a server with them (the MCP SDK,
 * the E2B SDKs), installed once per pinned set into {@code ~/.cache/agentnest/<name>} (or {@code
 * AGENTNEST_IT_NODE_DIR/<name>}) and reused: idempotent, keyed by the exact versions. Without node
 * or npm, or without the registry, the tests skip visibly; under {@code CI=true} they fail.
 */
public final class NodePackages {
  private NodePackages() {}

  /**
   * Returns the directory holding {@code node_modules} with exactly {@code specs} (each {@code
   * name@version}), installing what is missing.
   */
  public static synchronized Path install(String name, List<String> specs) {
    String problem = null;
    if (run(List.of("node", "--version"), Path.of("."), 30) != 0) {
      problem = "node is not on PATH (install Node.js 20+: apt-get install nodejs npm)";
    } else if (run(List.of("npm", "--version"), Path.of("."), 30) != 0) {
      problem = "npm is not on PATH (apt-get install npm)";
    }
    if (problem != null) {
      Prerequisites.missing("Node.js and npm", problem);
    }
    String root = System.getenv("AGENTNEST_IT_NODE_DIR");
    Path dir =
        (root != null
                ? Path.of(root)
                : Path.of(System.getProperty("user.home"), ".cache", "agentnest"))
            .resolve(name);
    try {
      Files.createDirectories(dir);
      boolean present = true;
      for (String spec : specs) {
        present &= installed(dir, spec);
      }
      if (!present) {
        Files.writeString(
            dir.resolve("package.json"),
            "{\"name\":\"agentnest-it-" + name + "\",\"private\":true,\"type\":\"module\"}\n");
        System.err.println("installing " + specs + " into " + dir + " ...");
        List<String> cmd =
            new ArrayList<>(
                List.of(
                    "npm",
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--loglevel=error",
                    "--save-exact"));
        cmd.addAll(specs);
        if (run(cmd, dir, 600) != 0) {
          Prerequisites.missing(
              "the npm packages " + specs,
              "npm install failed in " + dir + " (is the npm registry reachable?)");
        }
      }
    } catch (IOException e) {
      Prerequisites.missing("the npm packages " + specs, "cannot prepare " + dir + ": " + e);
    }
    return dir;
  }

  private static boolean installed(Path dir, String spec) throws IOException {
    int at = spec.lastIndexOf('@');
    String pkg = spec.substring(0, at);
    String version = spec.substring(at + 1);
    Path json = dir.resolve("node_modules").resolve(pkg).resolve("package.json");
    return Files.isRegularFile(json)
        && Files.readString(json, StandardCharsets.UTF_8)
            .contains("\"version\": \"" + version + "\"");
  }

  private static int run(List<String> cmd, Path dir, int seconds) {
    try {
      Process p =
          new ProcessBuilder(cmd)
              .directory(dir.toFile())
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.DISCARD)
              .start();
      if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return -1;
      }
      return p.exitValue();
    } catch (IOException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }
}
