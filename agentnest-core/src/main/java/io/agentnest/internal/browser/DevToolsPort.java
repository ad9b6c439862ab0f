package io.agentnest.internal.browser;

import io.agentnest.AgentNestException;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Sandbox;
import io.agentnest.internal.support.Bounded;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The DevTools port of one Chromium, and the check that what listens on it is that Chromium.
 *
 * <p>Code that ran in the sandbox earlier is an adversary (issue 42): with a predictable port (9222
 * + n) it listened there first and the host talked to it as if it were the browser. The port is now
 * drawn at random from a wide range, and before the host opens any connection to it, a check run in
 * the sandbox (Python in isolated mode: no user site, no environment) reads which sockets listen on
 * the port ({@code /proc/net/tcp}, {@code /proc/net/tcp6}) and requires every one of them to be
 * held by the process the host started (its pid, announced by the shell that then {@code exec}s
 * Chromium, and the random profile directory in its command line). Anything else listening there is
 * refused.
 */
final class DevToolsPort {
  static final int LOW = 20_000;
  static final int SPAN = 40_000;

  /** What the check reports for a port. */
  enum Owner {
    /** Nothing listens yet. */
    NONE,
    /** Every listener is the browser's. */
    BROWSER,
    /** Something else listens there (too). */
    FOREIGN
  }

  // Arguments: pid, port, profile. Prints one line: "agentnest-devtools <none|owned|foreign>".
  static final String CHECK =
      String.join(
          "\n",
          "import os, sys",
          "pid, port, profile = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]",
          "listening = set()",
          "for table in ('/proc/net/tcp', '/proc/net/tcp6'):",
          "    try:",
          "        with open(table) as fh:",
          "            next(fh, None)",
          "            for line in fh:",
          "                f = line.split()",
          "                if len(f) > 9 and f[3] == '0A' and int(f[1].rsplit(':', 1)[1], 16) == port:",
          "                    listening.add(f[9])",
          "    except OSError:",
          "        pass",
          "if not listening:",
          "    print('agentnest-devtools none')",
          "    sys.exit(0)",
          "held = set()",
          "try:",
          "    for fd in os.listdir('/proc/%d/fd' % pid):",
          "        try:",
          "            t = os.readlink('/proc/%d/fd/%s' % (pid, fd))",
          "        except OSError:",
          "            continue",
          "        if t.startswith('socket:[') and t.endswith(']'):",
          "            held.add(t[8:-1])",
          "    with open('/proc/%d/cmdline' % pid, 'rb') as fh:",
          "        argv = fh.read().split(b'\\0')",
          "except OSError:",
          "    argv = []",
          "mine = ('--user-data-dir=' + profile).encode() in argv",
          "print('agentnest-devtools ' + ('owned' if mine and listening <= held else 'foreign'))");

  private static final Pattern ANSWER = Pattern.compile("agentnest-devtools (none|owned|foreign)");
  private static final Pattern PID = Pattern.compile("agentnest-pid ([0-9]{1,9})");
  private static final SecureRandom RANDOM = new SecureRandom();

  private DevToolsPort() {}

  /** A port no earlier code in the sandbox can know in advance. */
  static int randomPort() {
    return LOW + RANDOM.nextInt(SPAN);
  }

  /** A profile directory name no earlier code can know in advance (also the browser's mark). */
  static String randomProfile() {
    byte[] b = new byte[12];
    RANDOM.nextBytes(b);
    return "/tmp/agentnest-chromium-" + HexFormat.of().formatHex(b);
  }

  /** The pid the starting shell announced on its first line, or -1. */
  static int pid(String firstOutput) {
    Matcher m = PID.matcher(firstOutput);
    return m.find() ? Integer.parseInt(m.group(1)) : -1;
  }

  /** Reads the check's one line; anything else counts as foreign. */
  static Owner parse(String stdout) {
    Matcher m = ANSWER.matcher(stdout.strip());
    if (!m.matches()) {
      return Owner.FOREIGN;
    }
    return switch (m.group(1)) {
      case "none" -> Owner.NONE;
      case "owned" -> Owner.BROWSER;
      default -> Owner.FOREIGN;
    };
  }

  /** Runs the check in {@code sb} once. */
  static Owner check(Sandbox sb, int pid, int port, String profile) {
    ExecResult r =
        sb.exec(
            List.of(
                "python3",
                "-I",
                "-S",
                "-c",
                CHECK,
                String.valueOf(pid),
                String.valueOf(port),
                profile),
            ExecOptions.builder().timeout(Duration.ofSeconds(10)).build());
    if (r.exitCode() != 0) {
      throw new AgentNestException(
          "cannot check who listens on the browser's DevTools port: "
              + Bounded.text(r.stderr().strip(), 300));
    }
    return parse(r.stdout());
  }

  /**
   * Waits until the browser listens on {@code port}; refuses as soon as anything else does.
   *
   * @throws AgentNestException naming the impostor, or the deadline
   */
  static void awaitBrowser(Sandbox sb, int pid, int port, String profile, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      Owner o = check(sb, pid, port, profile);
      if (o == Owner.BROWSER) {
        return;
      }
      if (o == Owner.FOREIGN) {
        throw new AgentNestException(
            "another process in the sandbox listens on the browser's DevTools port "
                + port
                + ": the host does not talk to it (refused as an impostor); the browser was not"
                + " started");
      }
      if (System.nanoTime() > deadline) {
        throw new AgentNestException(
            "Chromium's DevTools did not listen within "
                + timeout.toSeconds()
                + " s: the sandbox may lack memory or pids for it (the browser preset sets both)");
      }
      try {
        Thread.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AgentNestException("interrupted while Chromium started", e);
      }
    }
  }
}
