package io.agentnest.docker.internal;

import io.agentnest.spi.HealthCheck;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Whether Kata Containers (a VM per container) can run sandboxes through Docker: registered as a
 * runtime (by name, or by a path naming Kata's runtime or shim), installed but not registered, or
 * absent. Kata is optional; the microvm backend is AgentNest's own VM boundary.
 */
final class KataCheck {
  static final String NAME = "runtime kata (Kata Containers)";
  static final List<Path> BINARIES =
      List.of(
          Path.of("/usr/bin/kata-runtime"),
          Path.of("/usr/local/bin/kata-runtime"),
          Path.of("/opt/kata/bin/kata-runtime"),
          Path.of("/usr/bin/containerd-shim-kata-v2"),
          Path.of("/opt/kata/bin/containerd-shim-kata-v2"));

  private KataCheck() {}

  static HealthCheck of(Map<String, Object> runtimes, Predicate<Path> executable) {
    for (Map.Entry<String, Object> r : runtimes.entrySet()) {
      String path =
          r.getValue() instanceof Map<?, ?> m && m.get("path") instanceof String p ? p : "";
      if (r.getKey().contains("kata") || path.contains("kata")) {
        return HealthCheck.ok(
            NAME,
            "registered as '"
                + r.getKey()
                + "'"
                + (path.isEmpty() ? "" : " (" + path + ")")
                + ": --runtime "
                + r.getKey()
                + " runs each sandbox in its own VM");
      }
    }
    for (Path b : BINARIES) {
      if (executable.test(b)) {
        return HealthCheck.warn(
            NAME,
            b + " is installed but not registered in Docker",
            "add to /etc/docker/daemon.json: {\"runtimes\":{\"kata\":{\"path\":\""
                + b
                + "\"}}} and reload dockerd (kill -HUP); it needs /dev/kvm");
      }
    }
    return HealthCheck.ok(
        NAME,
        "not installed (optional: a VM per sandbox through Docker; or the microvm backend,"
            + " docs/runtimes.md)");
  }
}
