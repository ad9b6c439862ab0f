package io.agentnest.escapes.internal;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * What the host gives away: kernel memory and symbols, the engine socket, the environment and
 * mounts.
 */
final class HostInfoProbes {
  private HostInfoProbes() {}

  static void addTo(ProbeList p) {
    p.script("host-info.kcore", "read host memory through /proc/kcore");
    p.script("host-info.kallsyms", "read kernel symbol addresses (defeats KASLR)");
    p.script(
        "host-info.firmware-and-debugfs",
        "read /sys/firmware, debugfs, DMI serials, /proc/sched_debug, /proc/timer_list, /proc/keys");
    p.script(
        "host-info.docker-socket",
        "find or connect to the Docker, containerd, Podman or CRI-O socket");
    p.add(
        "host-info.environment",
        "find the host's environment variables (tokens, paths, users) in the sandbox",
        Map.of(),
        HostInfoProbes::hostEnvironment);
    p.add(
        "host-info.mountinfo",
        "learn host paths from /proc/self/mountinfo (home directories, project folders, bind"
            + " mounts)",
        Map.of(),
        HostInfoProbes::mountinfo);
  }

  private static Judgement hostEnvironment(ProbeContext ctx) {
    Judgement j = ctx.script("host-info.environment", Map.of());
    JsonNode env = j.data().path("env");
    // Variables AgentNest sets itself, with values of its own.
    Set<String> ours =
        Set.of(
            "HOME",
            "LANG",
            "PATH",
            "PYTHONDONTWRITEBYTECODE",
            "PWD",
            "SHLVL",
            "_",
            "HOSTNAME",
            "TERM",
            "NO_PROXY",
            "no_proxy",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
            ProbeContext.SECRET_VAR);
    List<String> leaked = new ArrayList<>();
    for (Map.Entry<String, String> e : System.getenv().entrySet()) {
      String k = e.getKey();
      String v = e.getValue();
      if (ours.contains(k) || k.startsWith("AGENTNEST_") || v.length() < 6) {
        continue;
      }
      for (Iterator<Map.Entry<String, JsonNode>> it = env.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> s = it.next();
        if (s.getValue().asText("").contains(v)) {
          leaked.add(k);
          break;
        }
      }
    }
    int n = env.size();
    return Judgement.of(
        !leaked.isEmpty() || n == 0,
        n == 0
            ? "the probe reported no environment"
            : n
                + " variables in the sandbox; host values found: "
                + (leaked.isEmpty() ? "none" : leaked));
  }

  /**
   * Where containerd 2 mounts a user-namespaced container's idmapped root layers: a scratch
   * directory of its own in its TMPDIR (/tmp on most nodes), named by containerd, not by anyone's
   * data.
   */
  private static final Pattern IDMAP_SCRATCH = Pattern.compile("(/[^/]+)*/ovl-idmapped[0-9]+/fs");

  private static Judgement mountinfo(ProbeContext ctx) {
    Judgement j = ctx.script("host-info.mountinfo", Map.of());
    List<String> hostPaths = new ArrayList<>();
    int engine = 0;
    int cgroups = 0;
    int bulk = 0;
    for (JsonNode m : j.data().path("mounts")) {
      String fstype = m.path("fstype").asText("");
      if (m.path("point").asText("").equals("/run/agentnest")
          && m.path("root").asText("").matches("(/run)?/agentnest/bulk/[0-9a-f]{32}")) {
        // The sandbox's own bulk link (read-only, empty but for the host's socket during a fork):
        // AgentNest's fixed layout and a random name, nothing of the host's.
        bulk++;
        continue;
      }
      if (Set.of(
              "proc", "sysfs", "tmpfs", "devpts", "devtmpfs", "mqueue", "cgroup", "cgroup2", "shm")
          .contains(fstype)) {
        // The root of a pseudo filesystem's mount is a path inside that filesystem (/proc/sys,
        // the container's own cgroup; /null for a device node that a user-namespaced container
        // gets bound in, as it may not make one), not a file on the host.
        cgroups++;
        continue;
      }
      for (String field : List.of("root", "source", "options")) {
        for (String token : m.path(field).asText("").split("[,:=]")) {
          if (!token.startsWith("/") || token.equals("/")) {
            continue;
          }
          if (ctx.engineRoots.stream().anyMatch(r -> token.startsWith(r + "/"))
              || IDMAP_SCRATCH.matcher(token).matches()) {
            engine++;
          } else if (field.equals("root") || field.equals("options")) {
            hostPaths.add(token);
          }
        }
      }
    }
    int n = j.data().path("mounts").size();
    return Judgement.of(
        !hostPaths.isEmpty() || n == 0,
        n
            + " mounts; host paths: "
            + (hostPaths.isEmpty() ? "none" : hostPaths.subList(0, Math.min(5, hostPaths.size())))
            + (engine > 0
                ? "; "
                    + engine
                    + " references to the engine's own storage under "
                    + String.join(", ", ctx.engineRoots)
                    + " (runc shows the kernel's mount table; they name no user data)"
                : "")
            + (cgroups > 0
                ? "; " + cgroups + " pseudo-filesystem mounts (proc, sysfs, tmpfs, its own cgroup)"
                : "")
            + (bulk > 0 ? "; its own bulk link at /run/agentnest (read-only)" : ""));
  }
}
