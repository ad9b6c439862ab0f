package io.agentnest.cli;

import io.agentnest.ExecError;
import io.agentnest.ExecResult;
import io.agentnest.FileOperationException;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** A guided tour in plain steps. */
@Command(
    name = "demo",
    mixinStandardHelpOptions = true,
    description =
        "Creates a sandbox, shows a persistent Python session, a shell command, a file round"
            + " trip and the security defaults taking effect, then destroys it.")
final class DemoCommand implements Callable<Integer> {
  @Mixin SandboxOptions sandbox = new SandboxOptions();

  private int step;

  private void say(String title) {
    System.out.printf("%n%d. %s%n", ++step, title);
  }

  private static void show(String label, @Nullable String text) {
    System.out.print(row(label, String.valueOf(text)));
  }

  private static final int LABEL_WIDTH = 28;

  /**
   * One step's line: the label, then the value in a column. A label too wide for the column gets a
   * line of its own when the value has several lines, so its first line does not run on from the
   * label ("$ uname -sr; ls -la /workspace Linux 6.1") and every line starts in the column.
   */
  static String row(String label, String value) {
    String indent = "\n   " + " ".repeat(LABEL_WIDTH + 1);
    String v = value.strip();
    String lines = v.replace("\n", indent);
    return label.length() > LABEL_WIDTH && v.contains("\n")
        ? "   " + label + indent + lines + "\n"
        : String.format("   %-" + LABEL_WIDTH + "s %s%n", label, lines);
  }

  @Override
  public Integer call() {
    SandboxConfig config = sandbox.toConfig();
    long t0 = System.nanoTime();
    say("Create a sandbox (" + config.image() + ", hardened, no network)");
    try (Sandbox sb = Sandbox.create(config)) {
      show("sandbox id", sb.id().substring(0, 12));
      show("ready after", (System.nanoTime() - t0) / 1_000_000 + " ms");

      say("Persistent Python session: state survives between calls");
      show(">>> a = 10; print(a * 2)", sb.runCode("a = 10; print(a * 2)").output());
      sb.runCode("b = a + 1");
      show(">>> b = a + 1; then: b", sb.runCode("b").result());
      ExecResult err = sb.runCode("1 / 0");
      ExecError pyErr = err.error();
      show(
          ">>> 1 / 0",
          (pyErr == null ? "?" : pyErr.name() + ": " + pyErr.value()) + " (a result, not a crash)");

      say("Shell command");
      ExecResult ls = sb.exec("uname -sr && ls -la /workspace | head -5");
      show("$ uname -sr; ls -la /workspace", ls.stdout());

      say("File round trip (path-safe API)");
      sb.files().write("data/in.csv", "name,score\nada,90\nalan,85\n");
      ExecResult mean =
          sb.runCode(
              "import csv\nrows = list(csv.DictReader(open('data/in.csv')))\n"
                  + "sum(int(r['score']) for r in rows) / len(rows)");
      show("wrote data/in.csv; mean score", mean.result());
      sb.runCode("open('data/out.txt', 'w').write('report from the sandbox')");
      show("read data/out.txt", sb.files().readString("data/out.txt"));
      try {
        sb.files().read("../etc/passwd");
      } catch (FileOperationException e) {
        show("read ../etc/passwd", "refused: " + e.code());
      }

      say("Security defaults in effect");
      show("user", sb.exec("id").stdout());
      show("capabilities (CapEff)", sb.exec("grep CapEff /proc/self/status | cut -f2").stdout());
      show("no_new_privs", sb.exec("grep NoNewPrivs /proc/self/status | cut -f2").stdout());
      show("write to /usr", sb.exec("touch /usr/x 2>&1 || true").stdout());
      show("network interfaces", sb.exec("ls /sys/class/net").stdout());
      show(
          "connect to 1.1.1.1:80",
          sb.runCode(
                  "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 80), 2)\n    r = 'connected'\n"
                      + "except OSError as e:\n    r = 'blocked: ' + (e.strerror or type(e).__name__)\nr")
              .result());
      show(
          "io_uring_setup",
          sb.runCode(
                  "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
                      + "'denied, errno %d' % ctypes.get_errno() if libc.syscall(425, 1, 0) < 0 else 'allowed'")
              .result());
      show(
          "memory / pids limit",
          sb.exec(
                  "cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory.max 2>/dev/null | head -1;"
                      + " cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/pids.max 2>/dev/null | head -1")
              .stdout());

      say("Destroy the sandbox");
    }
    show("destroyed; total", (System.nanoTime() - t0) / 1_000_000 + " ms");
    System.out.println(
        "\nNext: 'agentnest run -c \"print(1)\"', 'agentnest doctor', 'agentnest bench'.");
    return ExitCodes.OK;
  }
}
