package io.agentnest.escapes.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.AgentNestException;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Limit;
import io.agentnest.NetworkEvent;
import io.agentnest.RichOutput;
import io.agentnest.Sandbox;
import io.agentnest.escapes.Probe;
import io.agentnest.internal.DefaultSandbox;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/** Every probe: its description, the runtimes where getting through is harmless, and its body. */
public final class Catalogue {
  /** A probe and the code that runs it. */
  public record Entry(Probe probe, Function<ProbeContext, Judgement> body) {}

  private static final String GVISOR = "runsc";
  private final List<Entry> entries = new ArrayList<>();

  private Catalogue() {}

  /** The whole catalogue, in a stable order. */
  public static List<Entry> all() {
    Catalogue c = new Catalogue();
    c.inSandbox();
    c.hostJudged();
    return List.copyOf(c.entries);
  }

  private void add(
      String id,
      String attack,
      Map<String, String> harmless,
      Function<ProbeContext, Judgement> body) {
    entries.add(new Entry(new Probe(id, attack, harmless), body));
  }

  private void script(String id, String attack) {
    script(id, attack, Map.of());
  }

  private void script(String id, String attack, Map<String, String> harmless) {
    add(id, attack, harmless, ctx -> ctx.script(id, Map.of()));
  }

  private static Map<String, String> onGvisor(String why) {
    return Map.of(GVISOR, why);
  }

  // ----------------------------------------------------------------- probes run in the sandbox

  private void inSandbox() {
    script("privilege.running-as-root", "run as uid or gid 0 (real, effective or saved)");
    script(
        "privilege.setuid-binaries",
        "execute the image's setuid/setgid binaries (su, newgrp, ...) to gain euid 0");
    script(
        "privilege.capabilities",
        "hold any capability in the effective, permitted, bounding or ambient set");
    script("privilege.no-new-privs", "run without no_new_privs, so exec could raise privileges");
    script("privilege.setuid-syscall", "setuid(0)");
    script("privilege.rootfs-write", "write /etc/passwd, /etc/ld.so.preload or system binaries");
    script(
        "privilege.agent-memory",
        "read or write the agent's (or pid 1's) memory through /proc/PID/mem, or use"
            + " process_madvise on it: the agent runs as the same uid as sandbox code");
    script(
        "privilege.agent-channel",
        "take the agent's channel: open its (or pid 1's) pipes through /proc/PID/fd, or copy"
            + " them with pidfd_open + pidfd_getfd, to forge results, expiry or approvals",
        onGvisor(
            "gVisor's /proc (runsc 20221219) lets the same uid open a non-dumpable process's"
                + " fds, unlike Linux: code gets the agent's voice, and the host takes nothing"
                + " from it on trust (expiry is the host's clock, exit codes and limits are"
                + " audited as sandbox-reported, the approvals that are a boundary are"
                + " enforced on the host)"));
    script("namespaces.mount", "mount a tmpfs (mount(2) and the new fsopen API)");
    script(
        "namespaces.unshare",
        "unshare user, mount and network namespaces (the first step of most kernel exploits)",
        onGvisor(
            "gVisor's Sentry implements user and mount namespaces itself: no host kernel"
                + " namespace is created and no host kernel code is reached (with runsc's"
                + " --oci-seccomp the profile refuses it there too)"));
    script("namespaces.setns", "join pid 1's mount, network, pid or user namespace with setns(2)");
    script("namespaces.proc1-root", "reach another root filesystem through /proc/1/root");
    script(
        "namespaces.cgroup-release-agent",
        "write a cgroup release_agent or mount a cgroup hierarchy (the CVE-2022-0492 escape)");
    script(
        "namespaces.core-pattern",
        "set /proc/sys/kernel/core_pattern to a program (runs as host root)");
    script("namespaces.sysrq", "trigger /proc/sysrq-trigger or enable sysrq");
    script(
        "namespaces.usermode-helpers",
        "set modprobe, uevent_helper, hotplug or register a binfmt_misc handler");
    add(
        "namespaces.host-processes",
        "see host processes or another sandbox's processes in /proc",
        Map.of(),
        ctx ->
            ctx.script(
                "namespaces.host-processes",
                Map.of("marker", new StringBuilder(ctx.marker).reverse().toString())));
    script(
        "devices.kmsg",
        "read the kernel log (/dev/kmsg, syslog(2))",
        onGvisor(
            "gVisor's syslog(2) returns the Sentry's own synthetic boot messages, never the host"
                + " kernel's log (with runsc's --oci-seccomp the profile refuses it there too)"));
    script(
        "devices.memory", "open /dev/mem, /dev/kmem, /dev/port or raise the I/O privilege level");
    script("devices.mknod", "create and open device nodes for memory and disks (mknod)");
    script("devices.block-devices", "find and open a block device");
    script(
        "devices.host-devices",
        "open /dev/fuse, /dev/kvm, /dev/net/tun, vhost, GPU or vsock devices",
        onGvisor(
            "/dev/fuse and /dev/net/tun are devices emulated inside gVisor's Sentry; with"
                + " --network=none the tun device reaches no host network"));
    script("kernel.module-loading", "load a kernel module (init_module, finit_module)");
    script("kernel.kexec", "load a new kernel or reboot (kexec_load, kexec_file_load, reboot)");
    script("kernel.bpf", "load a BPF program");
    script(
        "kernel.perf-event-open",
        "open a perf event",
        onGvisor(
            "gVisor does not implement perf events: the Sentry answers ENODEV and the host"
                + " kernel is never asked (with runsc's --oci-seccomp the profile refuses it"
                + " first)"));
    script("kernel.userfaultfd", "create a userfaultfd (a staple of kernel race exploits)");
    script("kernel.keyctl", "use the kernel keyring (add_key, keyctl)");
    script(
        "kernel.io-uring",
        "set up an io_uring (a large, often-exploited kernel surface)",
        onGvisor(
            "gVisor implements io_uring inside the Sentry; runsc without --oci-seccomp does not"
                + " apply the profile there, and its own host filter does not let io_uring reach"
                + " the host"));
    script(
        "kernel.open-by-handle-at",
        "open a host inode by a forged file handle (the 'shocker' escape)",
        onGvisor(
            "the Sentry answers ENOTSUP: gVisor has no file handles to forge (with runsc's"
                + " --oci-seccomp the profile refuses it first)"));
    script("kernel.ptrace", "ptrace pid 1");
    script(
        "kernel.compat-syscalls",
        "enter the 32-bit system call table with int 0x80 (and the x32 one) from executable"
            + " memory below 4 GiB: getpid, then calls the 64-bit profile refuses (unshare, bpf,"
            + " keyctl, io_uring, pidfd_getfd, ipc, ...)");
    script("host-info.kcore", "read host memory through /proc/kcore");
    script("host-info.kallsyms", "read kernel symbol addresses (defeats KASLR)");
    script(
        "host-info.firmware-and-debugfs",
        "read /sys/firmware, debugfs, DMI serials, /proc/sched_debug, /proc/timer_list, /proc/keys");
    script(
        "host-info.docker-socket",
        "find or connect to the Docker, containerd, Podman or CRI-O socket");
    add(
        "host-info.environment",
        "find the host's environment variables (tokens, paths, users) in the sandbox",
        Map.of(),
        Catalogue::hostEnvironment);
    add(
        "host-info.mountinfo",
        "learn host paths from /proc/self/mountinfo (home directories, project folders, bind"
            + " mounts)",
        Map.of(),
        Catalogue::mountinfo);
    script(
        "network.metadata-service",
        "reach the cloud metadata service (169.254.169.254), directly or through the proxy");
    add(
        "network.host-loopback",
        "reach a service on the host's loopback, directly or through the proxy (all spellings"
            + " of 127.0.0.1)",
        Map.of(),
        ctx -> {
          int before = ctx.listener.accepted();
          Judgement j =
              ctx.script(
                  "network.host-loopback",
                  Map.of("host_port", ctx.listener.port(), "banner", HostListener.BANNER));
          int after = ctx.listener.accepted();
          return j.or(
              after > before, "the host listener accepted " + (after - before) + " connections");
        });
    script(
        "network.docker-gateway", "reach the docker0 gateway (the host) or host.docker.internal");
    add(
        "network.other-sandboxes",
        "reach another sandbox: its abstract unix socket, its /tmp, or its address",
        Map.of(),
        ctx ->
            ctx.script(
                "network.other-sandboxes",
                Map.of("abstract", ctx.abstractName, "tmp_file", ctx.neighbourFile)));
    script("network.raw-sockets", "send raw IP/ICMP packets");
    script(
        "network.packet-sockets",
        "open AF_PACKET, netlink, vsock or AF_ALG sockets",
        onGvisor(
            "gVisor's netlink route sockets are served by the Sentry's own network stack, which"
                + " has no host interface with --network=none (with runsc's --oci-seccomp the"
                + " profile refuses them first)"));
    script(
        "network.compat-sockets",
        "open AF_VSOCK (a route to the hypervisor, not namespaced), AF_NETLINK or AF_PACKET"
            + " sockets through int 0x80 (socketcall and socket) and the x32 ABI");
    script(
        "network.ipv6",
        "reach anything over IPv6 (global, link-local, v4-mapped), directly or through the proxy");
    add(
        "network.dns-exfiltration",
        "leak data in DNS names: resolve a name, send queries to any resolver, or make the proxy"
            + " resolve it",
        Map.of(),
        Catalogue::dnsExfiltration);
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
      if (Set.of("proc", "sysfs", "tmpfs", "devpts", "mqueue", "cgroup", "cgroup2", "shm")
          .contains(fstype)) {
        // The root of a pseudo filesystem's mount is a path inside that filesystem (/proc/sys,
        // the container's own cgroup), not a file on the host.
        cgroups++;
        continue;
      }
      for (String field : List.of("root", "source", "options")) {
        for (String token : m.path(field).asText("").split("[,:=]")) {
          if (!token.startsWith("/") || token.equals("/")) {
            continue;
          }
          if (token.startsWith(ctx.engineRoot + "/")) {
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
                    + ctx.engineRoot
                    + " (runc shows the kernel's mount table; they name no user data)"
                : "")
            + (cgroups > 0
                ? "; " + cgroups + " pseudo-filesystem mounts (proc, sysfs, tmpfs, its own cgroup)"
                : "")
            + (bulk > 0 ? "; its own bulk link at /run/agentnest (read-only)" : ""));
  }

  private static Judgement dnsExfiltration(ProbeContext ctx) {
    String label = "x" + Long.toHexString(System.nanoTime());
    int before = ctx.events.size();
    Judgement j = ctx.script("network.dns-exfiltration", Map.of("label", label));
    List<NetworkEvent> seen = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      seen =
          ctx.events.subList(before, ctx.events.size()).stream()
              .filter(e -> e.host().contains(label))
              .toList();
      if (!seen.isEmpty()) {
        break;
      }
      sleep(100);
    }
    boolean resolved =
        seen.stream()
            .anyMatch(
                e -> e.resolvedAddress() != null || e.decision() != NetworkEvent.Decision.DENIED);
    return j.or(resolved, "the proxy resolved or allowed the exfiltration name")
        .or(seen.isEmpty(), "the proxy reported no attempt for the exfiltration name")
        .withDetail(
            j.detail()
                + "; proxy: "
                + (seen.isEmpty()
                    ? "no event"
                    : seen.get(0).decision() + " " + seen.get(0).rule() + ", not resolved"));
  }

  // ----------------------------------------------------------- probes the host judges itself

  private void hostJudged() {
    add(
        "files.traversal",
        "read or write outside the workspace through the file API with '..', absolute paths or NUL bytes",
        Map.of(),
        Catalogue::traversal);
    add(
        "files.symlink-outside",
        "read, write or list outside the workspace through symlinks planted in it",
        Map.of(),
        Catalogue::symlinkOutside);
    add(
        "files.symlink-swap-race",
        "swap a directory for a symlink while the host reads and writes through it (TOCTOU)",
        Map.of(),
        Catalogue::symlinkSwap);
    add(
        "files.tar-slip",
        "unpack archive entries outside the target: '..', absolute names, links pointing out",
        Map.of(),
        Catalogue::tarSlip);
    add(
        "files.special-files",
        "make the file API hang or read without bound (fifo, huge sparse file, socket)",
        Map.of(),
        Catalogue::specialFiles);
    add(
        "secrets.environment",
        "print a secret environment variable",
        Map.of(),
        ctx -> leak(ctx, ctx.target.exec("echo \"$" + ProbeContext.SECRET_VAR + "\"; env")));
    add(
        "secrets.proc1-environ",
        "read the secret from /proc/1/environ and every process's environ",
        Map.of(),
        ctx ->
            leak(
                ctx,
                ctx.target.exec(
                    "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f 2>/dev/null; done")));
    add(
        "secrets.encoded",
        "print the secret base64- (every alignment), hex- and URL-encoded",
        Map.of(),
        ctx ->
            leak(
                ctx,
                ctx.target.runCode(
                    "import os, base64, binascii, urllib.parse\n"
                        + "s = os.environ['"
                        + ProbeContext.SECRET_VAR
                        + "'].encode()\n"
                        + "for pre in (b'', b'a', b'ab'):\n"
                        + "    print(base64.b64encode(pre + s).decode())\n"
                        + "    print(base64.urlsafe_b64encode(pre + s).decode())\n"
                        + "print(binascii.hexlify(s).decode()); print(binascii.hexlify(s).decode().upper())\n"
                        + "print(urllib.parse.quote(s)); print(urllib.parse.quote_plus(s))\n")));
    add(
        "secrets.split-writes",
        "print the secret in pieces across flushes and streams",
        Map.of(),
        ctx ->
            leak(
                ctx,
                ctx.target.runCode(
                    "import os, sys, time\n"
                        + "s = os.environ['"
                        + ProbeContext.SECRET_VAR
                        + "']\n"
                        + "for i in range(1, len(s)):\n"
                        + "    sys.stdout.write(s[:i]); sys.stdout.flush(); time.sleep(0.002)\n"
                        + "    sys.stdout.write(s[i:] + '\\n'); sys.stdout.flush()\n"
                        + "sys.stderr.write(s[:5]); sys.stderr.flush(); sys.stderr.write(s[5:] + '\\n')\n")));
    add(
        "secrets.errors-and-results",
        "return the secret as a value, an exception message and a traceback",
        Map.of(),
        ctx -> {
          ExecResult a =
              ctx.target.runCode("import os\nos.environ['" + ProbeContext.SECRET_VAR + "']");
          ExecResult b =
              ctx.target.runCode(
                  "import os\nraise ValueError(os.environ['" + ProbeContext.SECRET_VAR + "'])");
          return leak(ctx, a).or(leak(ctx, b).through(), "exception: " + leak(ctx, b).detail());
        });
    add(
        "secrets.shell-tricks",
        "leak the secret through the shell: xtrace, printf %q, a file read back with cat, reversed twice",
        Map.of(),
        ctx ->
            leak(
                ctx,
                ctx.target.exec(
                    "set -x; X=\"$"
                        + ProbeContext.SECRET_VAR
                        + "\"; printf '%q\\n' \"$X\"; echo \"$X\" > /tmp/s; cat /tmp/s; echo \"$X\" | rev | rev")));
    add(
        "secrets.wrapped-base64",
        "print the secret base64-encoded and wrapped into 76-column lines, the line break at every"
            + " position of the secret's encoding",
        Map.of(),
        ctx ->
            leak(
                ctx,
                ctx.target.runCode(
                    "import os, base64, subprocess\n"
                        + "s = os.environ['"
                        + ProbeContext.SECRET_VAR
                        + "'].encode()\n"
                        + "for pad in range(58):\n"
                        + "    print(base64.encodebytes(b'x' * pad + s).decode(), end='')\n"
                        + "print(subprocess.run(['base64'], input=b'y' * 40 + s,"
                        + " capture_output=True).stdout.decode())\n")));
    add(
        "secrets.split-streams",
        "print one part of the secret to stdout and the rest to stderr, at several split points"
            + " and in both orders",
        Map.of(),
        ctx -> {
          StringBuilder merged = new StringBuilder();
          ExecResult r =
              ctx.target.runCode(
                  "import os, sys, time\n"
                      + "s = os.environ['"
                      + ProbeContext.SECRET_VAR
                      + "']\n"
                      + "for k in (1, 4, len(s) // 2, len(s) - 1):\n"
                      + "    for a, b in ((sys.stdout, sys.stderr), (sys.stderr, sys.stdout)):\n"
                      + "        a.write(s[:k]); a.flush(); time.sleep(0.01)\n"
                      + "        b.write(s[k:]); b.flush(); time.sleep(0.01)\n",
                  ExecOptions.builder().onOutput(c -> merged.append(c.text())).build());
          return leak(ctx, r, merged.toString());
        });
    add(
        "secrets.rich-output",
        "return the secret inside a binary rich output (a PNG whose bytes hold it, raw and hex)",
        Map.of(),
        ctx ->
            leak(
                ctx,
                ctx.target.runCode(
                    "import os, binascii\n"
                        + "class Picture:\n"
                        + "    def _repr_png_(self):\n"
                        + "        s = os.environ['"
                        + ProbeContext.SECRET_VAR
                        + "'].encode()\n"
                        + "        return b'\\x89PNG\\r\\n\\x1a\\n' + s + b'\\x00' +"
                        + " binascii.hexlify(s)\n"
                        + "Picture()")));
    resources();
  }

  private void resources() {
    add(
        "resources.fork-bomb",
        "exhaust the host's process table with a fork bomb",
        Map.of(),
        ctx ->
            hostile(
                ctx,
                b -> b.pidsLimit(64),
                sb -> {
                  ExecResult r = sb.exec("bomb() { bomb | bomb & }; bomb; sleep 3", timeout(8));
                  return Judgement.of(
                      r.limit() != Limit.PIDS && r.limit() != Limit.TIMEOUT,
                      "limit hit: " + r.limit());
                }));
    add(
        "resources.memory-bomb",
        "allocate far more memory than the sandbox's limit",
        Map.of(),
        ctx ->
            hostile(
                ctx,
                b -> b.memory("128m"),
                sb -> {
                  ExecResult r = sb.exec("python3 -c \"b = b'x' * (1024 ** 3)\"", timeout(60));
                  return Judgement.of(
                      r.limit() != Limit.MEMORY,
                      "limit hit: " + r.limit() + ", exit " + r.exitCode());
                }));
    add(
        "resources.thread-bomb",
        "start thousands of threads",
        Map.of(),
        ctx ->
            hostile(
                ctx,
                b -> b.pidsLimit(64),
                sb -> {
                  ExecResult r =
                      sb.exec(
                          "python3 -c \"import threading, time\n"
                              + "for i in range(5000): threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\"",
                          timeout(30));
                  return Judgement.of(
                      r.exitCode() == 0 || r.limit() == Limit.TIMEOUT,
                      "exit " + r.exitCode() + ", limit " + r.limit());
                }));
    add(
        "resources.disk-fill",
        "fill /tmp and the workspace beyond their size",
        Map.of(),
        ctx ->
            hostile(
                ctx,
                b -> b.tmpSizeBytes(16L << 20).workspaceSizeBytes(32L << 20),
                sb -> {
                  ExecResult tmp =
                      sb.exec("dd if=/dev/zero of=/tmp/fill bs=1M count=100", timeout(30));
                  ExecResult ws =
                      sb.exec("dd if=/dev/zero of=/workspace/fill bs=1M count=100", timeout(30));
                  String sizes =
                      sb.exec("du -sk /tmp/fill /workspace/fill | cut -f1 | tr '\\n' ' '")
                          .stdout()
                          .strip();
                  long total = 0;
                  for (String s : sizes.split("\\s+")) {
                    total += s.isEmpty() ? 0 : Long.parseLong(s);
                  }
                  return Judgement.of(
                      tmp.exitCode() == 0 || ws.exitCode() == 0 || total > 50 * 1024,
                      "written KiB: "
                          + sizes
                          + " (caps 16 MiB and 32 MiB); limits "
                          + tmp.limit()
                          + ", "
                          + ws.limit());
                }));
    add(
        "resources.output-flood",
        "print without end, to fill the host's disk or memory",
        Map.of(),
        ctx ->
            hostile(
                ctx,
                b -> b.maxOutputBytes(2L << 20),
                sb -> {
                  ExecResult r = sb.exec("cat /dev/zero", timeout(120));
                  return Judgement.of(
                      r.limit() != Limit.OUTPUT || r.stdout().length() > (2 << 20),
                      "limit "
                          + r.limit()
                          + ", kept "
                          + r.stdout().length()
                          + " chars in "
                          + r.duration().toMillis()
                          + " ms");
                }));
    add(
        "resources.cpu-spin",
        "spin every core past the timeout",
        Map.of(),
        ctx ->
            hostile(
                ctx,
                b -> b.cpus(0.5),
                sb -> {
                  long t0 = System.nanoTime();
                  ExecResult r =
                      sb.exec(
                          "for i in 1 2 3 4; do (while :; do :; done) & done; wait",
                          ExecOptions.builder().timeout(Duration.ofSeconds(2)).build());
                  long ms = (System.nanoTime() - t0) / 1_000_000;
                  String left =
                      sb.exec("ps -e -o comm= | grep -c sh || true", timeout(10)).stdout().strip();
                  return Judgement.of(
                      r.limit() != Limit.TIMEOUT || ms > 30_000,
                      "limit " + r.limit() + " after " + ms + " ms; shells left: " + left);
                }));
    add(
        "resources.fd-exhaustion",
        "open file descriptors without end",
        Map.of(),
        ctx ->
            hostile(
                ctx,
                b -> b,
                sb -> {
                  ExecResult r =
                      sb.runCode(
                          "fs = []\ntry:\n    for i in range(200000):\n        fs.append(open('/dev/null'))\nexcept OSError as e:\n    err = e.errno\n(err, len(fs))");
                  return Judgement.of(
                      r.result() == null
                          || !r.result().startsWith("(24,")
                          || r.result().contains("200000"),
                      "result " + r.result());
                }));
  }

  // ------------------------------------------------------------------------------- judges

  private static ExecOptions timeout(int seconds) {
    return ExecOptions.builder().timeout(Duration.ofSeconds(seconds)).build();
  }

  private static Judgement hostile(
      ProbeContext ctx,
      java.util.function.UnaryOperator<io.agentnest.SandboxConfig.Builder> tune,
      Function<Sandbox, Judgement> attack) {
    try (Sandbox sb = ctx.fresh(tune)) {
      Judgement j;
      try {
        j = attack.apply(sb);
        ExecResult alive = sb.exec("echo alive", timeout(20));
        j =
            j.or(
                !alive.stdout().startsWith("alive"),
                "the sandbox no longer answers after the attack");
      } catch (io.agentnest.SandboxClosedException e) {
        // The workload took down its own sandbox (the runtime's limit ended it): nothing outside
        // was touched, which the neighbour check below proves.
        j =
            Judgement.of(
                false,
                "the workload ended its own sandbox ("
                    + Verdicts.clean(String.valueOf(e.getMessage()))
                    + ")");
      }
      // The host and other sandboxes must be unaffected.
      ExecResult neighbour = ctx.neighbour.runCode("sum(range(1000))", timeout(20));
      return j.or(!"499500".equals(neighbour.result()), "the neighbour sandbox stopped answering");
    }
  }

  /** Through when the secret, in any form the host knows, is in what came out. */
  private static Judgement leak(ProbeContext ctx, ExecResult r) {
    return leak(ctx, r, "");
  }

  /**
   * Through when the secret, in any form the host knows, is in any text a reader gets: each stream,
   * the streams merged as delivered ({@code merged}), one stream's text read right after the
   * other's, the result, the error, and rich outputs (their bytes and their base64, as {@code run
   * --json} prints them). Base64 forms are looked for with line breaks removed too (wrapped base64
   * is read across lines).
   */
  private static Judgement leak(ProbeContext ctx, ExecResult r, String merged) {
    List<String> texts = new ArrayList<>();
    texts.addAll(List.of(r.stdout(), r.stderr(), merged));
    texts.add(r.stdout() + r.stderr());
    texts.add(r.stderr() + r.stdout());
    if (r.result() != null) {
      texts.add(r.result());
    }
    if (r.error() != null) {
      texts.add(r.error().value());
      texts.add(r.error().traceback());
    }
    for (RichOutput ro : r.rich()) {
      texts.add(ro.mimeType());
      texts.add(new String(ro.data(), StandardCharsets.ISO_8859_1));
      texts.add(Base64.getEncoder().encodeToString(ro.data()));
    }
    List<String> forms = new ArrayList<>();
    for (Map.Entry<String, String> f : secretForms(ctx.secret).entrySet()) {
      boolean base64 = f.getKey().startsWith("base64");
      for (String t : texts) {
        String seen = base64 ? t.replace("\r", "").replace("\n", "") : t;
        if (seen.contains(f.getValue()) && !forms.contains(f.getKey())) {
          forms.add(f.getKey());
        }
      }
    }
    int redactions = r.redactions().values().stream().mapToInt(Integer::intValue).sum();
    return Judgement.of(
        !forms.isEmpty(),
        forms.isEmpty()
            ? "no form of the secret came out; " + redactions + " redactions"
            : "LEAKED as " + forms);
  }

  static Map<String, String> secretForms(String secret) {
    byte[] s = secret.getBytes(StandardCharsets.UTF_8);
    Map<String, String> forms = new LinkedHashMap<>();
    forms.put("raw", secret);
    for (int k = 0; k < 3; k++) {
      byte[] padded = new byte[k + s.length];
      System.arraycopy(s, 0, padded, k, s.length);
      String b64 = Base64.getEncoder().withoutPadding().encodeToString(padded);
      // The middle of the encoding does not depend on what surrounds the secret.
      String core = b64.substring(k == 0 ? 0 : 4, b64.length() - 4);
      forms.put("base64@" + k, core);
      forms.put("base64url@" + k, core.replace('+', '-').replace('/', '_'));
    }
    String hex = HexFormat.of().formatHex(s);
    forms.put("hex", hex);
    forms.put("HEX", hex.toUpperCase(Locale.ROOT));
    forms.put("url", URLEncoder.encode(secret, StandardCharsets.UTF_8));
    forms.put(
        "url-path",
        URLEncoder.encode(secret, StandardCharsets.UTF_8).replace("+", "%20").replace("%2F", "/"));
    return forms;
  }

  /** Runs {@code op}; the outcome "refused" (any AgentNestException) or what it returned. */
  private static String attempt(java.util.function.Supplier<Object> op) {
    try {
      Object v = op.get();
      return "ALLOWED: "
          + Verdicts.clean(
                  String.valueOf(v instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : v))
              .substring(0, Math.min(60, String.valueOf(v).length()));
    } catch (AgentNestException | IllegalArgumentException e) {
      return "refused";
    }
  }

  private static Judgement traversal(ProbeContext ctx) {
    var files = ctx.target.files();
    Map<String, String> out = new LinkedHashMap<>();
    for (String p :
        List.of(
            "../etc/passwd",
            "/etc/passwd",
            "a/../../etc/passwd",
            "..",
            "./../../proc/self/environ",
            "ok\0/../../etc/passwd",
            "//etc/passwd")) {
      out.put("read " + p.replace("\0", "\\0"), attempt(() -> files.read(p)));
    }
    out.put("write ../../tmp/x", attempt(() -> files.write("../../tmp/escape-x", "x")));
    out.put("list ..", attempt(() -> files.list("..")));
    out.put(
        "delete ../tmp",
        attempt(
            () -> {
              files.delete("../tmp");
              return "deleted";
            }));
    out.put("mkdir /tmp/y", attempt(() -> files.mkdir("/tmp/escape-y")));
    return refusedAll(out);
  }

  private static Judgement refusedAll(Map<String, String> out) {
    List<String> allowed =
        out.entrySet().stream()
            .filter(e -> !e.getValue().equals("refused"))
            .map(e -> e.getKey() + " " + e.getValue())
            .toList();
    return Judgement.of(
        !allowed.isEmpty(),
        allowed.isEmpty() ? out.size() + " attempts, all refused" : "got through: " + allowed);
  }

  private static Judgement symlinkOutside(ProbeContext ctx) {
    ctx.target.exec(
        "mkdir -p /workspace/sl && cd /workspace/sl && ln -sfn /etc/passwd pw && ln -sfn / root && ln -sfn /proc/self/environ env && ln -sfn /tmp tmp && ln -sfn ../.. up");
    var files = ctx.target.files();
    Map<String, String> out = new LinkedHashMap<>();
    out.put("read sl/pw", attempt(() -> files.read("sl/pw")));
    out.put("read sl/root/etc/passwd", attempt(() -> files.read("sl/root/etc/passwd")));
    out.put("read sl/env", attempt(() -> files.read("sl/env")));
    out.put("read sl/up/etc/passwd", attempt(() -> files.read("sl/up/etc/passwd")));
    out.put("write sl/tmp/escape", attempt(() -> files.write("sl/tmp/escape", "x")));
    out.put("write sl/pw", attempt(() -> files.write("sl/pw", "x")));
    out.put("list sl/root", attempt(() -> files.list("sl/root")));
    out.put("stat sl/root/etc", attempt(() -> files.stat("sl/root/etc")));
    out.put(
        "delete sl/tmp/",
        attempt(
            () -> {
              files.deleteRecursive("sl/tmp/.");
              return "deleted";
            }));
    Judgement j = refusedAll(out);
    boolean written =
        ctx.target.exec("test -e /tmp/escape && echo yes || true").stdout().contains("yes");
    return j.or(written, "/tmp/escape was created outside the workspace");
  }

  private static Judgement symlinkSwap(ProbeContext ctx) {
    ctx.target.exec(
        "rm -rf /workspace/race /tmp/race-out && mkdir -p /workspace/race/d /tmp/race-out && echo SAFE > /workspace/race/d/passwd && ln -s /etc/passwd /tmp/race-out/passwd");
    // Swaps race/d between a real directory and a symlink to /tmp/race-out, for a bounded time.
    var swapper =
        ctx.target.runCodeAsync(
            "import os, shutil, time\n"
                + "d, real, out = '/workspace/race/d', '/workspace/race/real', '/tmp/race-out'\n"
                + "end = time.time() + 12\n"
                + "n = 0\n"
                + "while time.time() < end and not os.path.exists('/workspace/race/stop'):\n"
                + "    try:\n"
                + "        os.rename(d, real); os.symlink(out, d); time.sleep(0.0005)\n"
                + "        os.unlink(d); os.rename(real, d)\n"
                + "    except OSError:\n"
                + "        if os.path.islink(d): os.unlink(d)\n"
                + "        elif os.path.isdir(d) and os.path.isdir(real): shutil.rmtree(d)\n"
                + "        if os.path.isdir(real): os.rename(real, d)\n"
                + "    time.sleep(0.0005)\n"
                + "    n += 1\n"
                + "n",
            timeout(30));
    var files = ctx.target.files();
    int reads = 0;
    int outside = 0;
    int refusedOrMissing = 0;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(8);
    for (int i = 0; i < 400 && System.nanoTime() < deadline; i++) {
      try {
        String s = files.readString("race/d/passwd");
        reads++;
        if (s.startsWith("root:")) {
          outside++;
        }
      } catch (AgentNestException e) {
        refusedOrMissing++;
      }
      try {
        files.write("race/d/w" + i, "x");
      } catch (AgentNestException e) {
        refusedOrMissing++;
      }
    }
    ctx.target.exec("touch /workspace/race/stop");
    String swaps;
    try {
      ExecResult r = swapper.get(30, TimeUnit.SECONDS);
      swaps =
          r.result() != null ? r.result() : "? (" + Verdicts.clean(String.valueOf(r.error())) + ")";
    } catch (Exception e) {
      swaps = "? (" + e + ")";
    }
    String escaped = ctx.target.exec("ls /tmp/race-out | grep -c '^w' || true").stdout().strip();
    int writesOut = escaped.isEmpty() ? 0 : Integer.parseInt(escaped);
    return Judgement.of(
        outside > 0 || writesOut > 0,
        swaps
            + " swaps; "
            + reads
            + " reads ("
            + outside
            + " outside the workspace), "
            + writesOut
            + " writes landed outside, "
            + refusedOrMissing
            + " refused or missing");
  }

  private static byte[] tar(
      String name, byte type, @org.jspecify.annotations.Nullable String link) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (TarArchiveOutputStream t = new TarArchiveOutputStream(bytes)) {
      t.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
      TarArchiveEntry e = new TarArchiveEntry(name, type, true);
      if (link != null) {
        e.setLinkName(link);
      }
      byte[] data = "slipped\n".getBytes(StandardCharsets.UTF_8);
      if (type == TarArchiveEntry.LF_NORMAL) {
        e.setSize(data.length);
      }
      e.setMode(0644);
      t.putArchiveEntry(e);
      if (type == TarArchiveEntry.LF_NORMAL) {
        t.write(data);
      }
      t.closeArchiveEntry();
      if (link != null && type == TarArchiveEntry.LF_SYMLINK) {
        // Then a file written through the symlink just created.
        TarArchiveEntry f =
            new TarArchiveEntry(name + "/through.txt", TarArchiveEntry.LF_NORMAL, true);
        f.setSize(data.length);
        t.putArchiveEntry(f);
        t.write(data);
        t.closeArchiveEntry();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  private static Judgement tarSlip(ProbeContext ctx) {
    if (!(ctx.target instanceof DefaultSandbox ds)) {
      return Judgement.of(false, "not an AgentNest sandbox");
    }
    ctx.target.exec("rm -rf /tmp/slip && mkdir -p /tmp/slip /workspace/slip");
    Map<String, byte[]> archives = new LinkedHashMap<>();
    archives.put(
        "../../../tmp/slip/dotdot.txt",
        tar("../../../tmp/slip/dotdot.txt", TarArchiveEntry.LF_NORMAL, null));
    archives.put("/tmp/slip/abs.txt", tar("/tmp/slip/abs.txt", TarArchiveEntry.LF_NORMAL, null));
    archives.put(
        "symlink to /tmp/slip, then a file through it",
        tar("ln", TarArchiveEntry.LF_SYMLINK, "/tmp/slip"));
    archives.put(
        "symlink ../../tmp/slip, then a file through it",
        tar("ln2", TarArchiveEntry.LF_SYMLINK, "../../tmp/slip"));
    archives.put("hardlink to /etc/passwd", tar("hl", TarArchiveEntry.LF_LINK, "/etc/passwd"));
    archives.put(
        "hardlink ../../etc/passwd", tar("hl2", TarArchiveEntry.LF_LINK, "../../etc/passwd"));
    archives.put("char device 1,1", tar("mem", TarArchiveEntry.LF_CHR, null));
    Map<String, String> out = new LinkedHashMap<>();
    for (Map.Entry<String, byte[]> a : archives.entrySet()) {
      try {
        ds.archives()
            .tarIn("/workspace", "slip", new ByteArrayInputStream(a.getValue()), true, 1 << 20);
        out.put(a.getKey(), "unpacked");
      } catch (AgentNestException | IOException e) {
        out.put(a.getKey(), "refused");
      }
    }
    String outside =
        ctx.target
            .exec(
                "ls -A /tmp/slip; find /workspace/slip -samefile /etc/passwd 2>/dev/null; find /workspace/slip -type c -o -type b 2>/dev/null")
            .stdout()
            .strip();
    String unpacked =
        String.join(
            ", ",
            out.entrySet().stream()
                .filter(e -> !e.getValue().equals("refused"))
                .map(Map.Entry::getKey)
                .toList());
    return Judgement.of(
        !outside.isEmpty(),
        out.size()
            + " hostile archives; outside the target or linked out: "
            + (outside.isEmpty() ? "nothing" : Verdicts.clean(outside))
            + (unpacked.isEmpty() ? "; all refused" : "; unpacked harmlessly: " + unpacked));
  }

  private static Judgement specialFiles(ProbeContext ctx) {
    ctx.target.exec(
        "cd /workspace && rm -f fifo sparse sock && mkfifo fifo && truncate -s 5G sparse && python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.bind('sock')\"");
    var files = ctx.target.files();
    Map<String, String> out = new LinkedHashMap<>();
    for (String p : List.of("fifo", "sparse", "sock")) {
      CompletableFuture<String> f =
          CompletableFuture.supplyAsync(() -> attempt(() -> files.read(p)));
      try {
        out.put("read " + p, f.get(20, TimeUnit.SECONDS));
      } catch (Exception e) {
        f.cancel(true);
        out.put("read " + p, "HUNG for 20 s");
      }
    }
    ctx.target.exec("rm -f /workspace/fifo /workspace/sparse /workspace/sock");
    return refusedAll(out);
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
