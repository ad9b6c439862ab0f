package io.agentnest.internal.browser;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Issue 42 (4): sandbox code listened on the browser's predictable DevTools port before the browser
 * started, and the host talked to it. The check that now runs in the sandbox before the host
 * connects is run here on this host's own /proc against real processes on loopback: the impostor
 * holding the port is told apart from the browser the host started.
 */
class DevToolsPortTest {
  private final List<Process> started = new ArrayList<>();

  @AfterEach
  void stop() {
    started.forEach(Process::destroyForcibly);
  }

  /** A process with {@code args} in its command line; listens on loopback (port 0: any) or not. */
  private Process process(boolean listen, int port, String... args) throws IOException {
    String code =
        "import socket, sys, time\n"
            + (listen
                ? "s = socket.socket(); s.bind(('127.0.0.1', "
                    + port
                    + ")); s.listen(1)\nprint(s.getsockname()[1], flush=True)\n"
                : "print(0, flush=True)\n")
            + "time.sleep(60)\n";
    List<String> argv = new ArrayList<>(List.of("python3", "-I", "-S", "-c", code));
    argv.addAll(List.of(args));
    Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
    started.add(p);
    return p;
  }

  private static int firstLine(Process p) throws IOException {
    BufferedReader r =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    String line = r.readLine();
    assertThat(line).as("the helper process started").isNotNull().matches("[0-9]+");
    return Integer.parseInt(line);
  }

  private static DevToolsPort.Owner check(long pid, int port, String profile) throws Exception {
    Process p =
        new ProcessBuilder(
                "python3",
                "-I",
                "-S",
                "-c",
                DevToolsPort.CHECK,
                String.valueOf(pid),
                String.valueOf(port),
                profile)
            .redirectErrorStream(true)
            .start();
    assertThat(p.waitFor(20, TimeUnit.SECONDS)).isTrue();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as(out).isZero();
    return DevToolsPort.parse(out);
  }

  @Test
  void anImpostorThatListensFirstIsRefusedAndTheBrowserIsRecognised() throws Exception {
    String profile = DevToolsPort.randomProfile();
    // The impostor: earlier sandbox code, listening first, even with the browser's mark copied.
    Process impostor = process(true, 0, "--user-data-dir=" + profile);
    int port = firstLine(impostor);
    // The browser the host started: its port is taken, so it does not listen.
    Process browser = process(false, 0, "--user-data-dir=" + profile);
    firstLine(browser);
    assertThat(check(browser.pid(), port, profile))
        .as("the port is held by another process than the one the host started")
        .isEqualTo(DevToolsPort.Owner.FOREIGN);

    // The real case: the started process itself listens on a port nothing else holds.
    Process real = process(true, 0, "--user-data-dir=" + profile);
    int realPort = firstLine(real);
    assertThat(check(real.pid(), realPort, profile)).isEqualTo(DevToolsPort.Owner.BROWSER);
    assertThat(check(real.pid(), realPort, "/tmp/agentnest-chromium-other"))
        .as("the process must carry the random profile the host gave it")
        .isEqualTo(DevToolsPort.Owner.FOREIGN);

    impostor.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    assertThat(check(browser.pid(), port, profile))
        .as("nothing listens: wait, do not connect")
        .isEqualTo(DevToolsPort.Owner.NONE);
  }

  @Test
  void portsAndProfilesAreNotPredictable() {
    Set<Integer> ports = new HashSet<>();
    Set<String> profiles = new HashSet<>();
    for (int i = 0; i < 50; i++) {
      int p = DevToolsPort.randomPort();
      assertThat(p).isBetween(DevToolsPort.LOW, DevToolsPort.LOW + DevToolsPort.SPAN - 1);
      ports.add(p);
      profiles.add(DevToolsPort.randomProfile());
    }
    assertThat(ports).as("not 9222 + n").hasSizeGreaterThan(40);
    assertThat(profiles).hasSize(50);
  }

  @Test
  void onlyTheCheckersExactAnswerCounts() {
    assertThat(DevToolsPort.parse("agentnest-devtools owned\n"))
        .isEqualTo(DevToolsPort.Owner.BROWSER);
    assertThat(DevToolsPort.parse("agentnest-devtools none")).isEqualTo(DevToolsPort.Owner.NONE);
    assertThat(DevToolsPort.parse("x\nagentnest-devtools owned"))
        .isEqualTo(DevToolsPort.Owner.FOREIGN);
    assertThat(DevToolsPort.parse("")).isEqualTo(DevToolsPort.Owner.FOREIGN);
    assertThat(DevToolsPort.pid("agentnest-pid 4242\n")).isEqualTo(4242);
    assertThat(DevToolsPort.pid("nothing")).isEqualTo(-1);
  }
}
