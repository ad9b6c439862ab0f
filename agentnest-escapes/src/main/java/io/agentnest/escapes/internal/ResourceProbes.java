package io.agentnest.escapes.internal;

import static io.agentnest.escapes.internal.Judges.hostile;
import static io.agentnest.escapes.internal.Judges.timeout;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Limit;
import java.time.Duration;
import java.util.Map;

/**
 * Resources, judged by the host: bombs and floods must end inside the sandbox and spare its
 * neighbour.
 */
final class ResourceProbes {
  private ResourceProbes() {}

  static void addTo(ProbeList p) {
    p.add(
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
    p.add(
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
    p.add(
        "resources.thread-bomb",
        "start thousands of threads",
        Map.of(
            "runsc",
            "gVisor runs the threads inside its own kernel, not as the node's tasks: the node's"
                + " process table is untouched and the memory limit bounds them"),
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
    p.add(
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
    p.add(
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
    p.add(
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
    p.add(
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
}
