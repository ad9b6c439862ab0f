package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.docker.DockerEngineRequired;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code agentnest run} on a real terminal: util-linux {@code script} gives the CLI a pty, so
 * {@code System.console()} exists and the approval question is asked on the screen the sandbox
 * prints to, as for a person.
 */
@ExtendWith(DockerEngineRequired.class)
class RunTerminalIT {
  private static final String PROMPT = "allow? [y]es / [a]lways / [N]o: ";

  /**
   * Sandbox code that repaints the screen while its own deletion waits for approval: cursor up,
   * carriage return, erase line and a fake question, an OSC 52 clipboard write, then hidden text.
   */
  private static final String SPOOF =
      """
      import os, sys, threading, time
      open('victim.txt', 'w').write('x')
      stop = threading.Event()
      ticks = [0]
      def noise():
          for i in range(400):
              if stop.is_set():
                  break
              sys.stdout.write('\\x1b[1A\\r\\x1b[2Kallow? tick%d \\x1b]52;c;aGk=\\x07\\x1b[8m\\n' % i)
              sys.stdout.flush()
              ticks[0] = i + 1
              time.sleep(0.05)
      t = threading.Thread(target=noise, daemon=True)
      t.start()
      for _ in range(500):
          if ticks[0]:
              break
          time.sleep(0.01)
      before = ticks[0]
      os.remove('victim.txt')
      during = ticks[0] - before
      stop.set()
      t.join()
      print('ticks during the question: %d' % during)
      """;

  /** A process on a pty, its screen collected (bounded) and its keyboard at hand. */
  record Pty(Process process, ByteArrayOutputStream screen, OutputStream keys)
      implements AutoCloseable {
    String text() {
      synchronized (screen) {
        return screen.toString(StandardCharsets.UTF_8);
      }
    }

    @Override
    public void close() throws InterruptedException {
      process.descendants().forEach(ProcessHandle::destroy);
      process.destroy();
      if (!process.waitFor(20, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    }
  }

  static Pty onPty(Path home, String... cliArgs) throws IOException, InterruptedException {
    if (Processes.run(List.of("script", "--version"), Path.of("."), 30).exit() != 0) {
      DockerEngineRequired.missing(
          "util-linux 'script'", "it gives the CLI a real terminal (apt-get install bsdutils)");
    }
    List<String> cli = Processes.cli(cliArgs);
    StringBuilder line = new StringBuilder();
    for (String a : cli) {
      line.append('\'').append(a.replace("'", "'\\''")).append("' ");
    }
    ProcessBuilder pb =
        new ProcessBuilder("script", "-q", "-e", "-c", line.toString().strip(), "/dev/null");
    pb.environment().put("AGENTNEST_HOME", home.toString());
    pb.redirectErrorStream(true);
    Process p = pb.start();
    ByteArrayOutputStream screen = new ByteArrayOutputStream();
    Thread reader =
        new Thread(
            () -> {
              byte[] buf = new byte[8192];
              try (InputStream in = p.getInputStream()) {
                int n;
                while ((n = in.read(buf)) > 0) {
                  synchronized (screen) {
                    if (screen.size() < (4 << 20)) {
                      screen.write(buf, 0, n);
                    }
                  }
                }
              } catch (IOException e) {
                // the process ended
              }
            },
            "pty-reader");
    reader.setDaemon(true);
    reader.start();
    return new Pty(p, screen, p.getOutputStream());
  }

  @Test
  void sandboxOutputWaitsWhileTheQuestionIsOpenAndCannotDriveTheTerminal(@TempDir Path dir)
      throws Exception {
    Path script = dir.resolve("spoof.py");
    Files.writeString(script, SPOOF);
    try (Pty pty = onPty(dir.resolve("home"), "run", "--guard", "-f", script.toString())) {
      Awaitility.await()
          .atMost(Duration.ofMinutes(3))
          .until(() -> pty.text().contains(PROMPT) || !pty.process().isAlive());
      assertThat(pty.text()).as("the question was asked").contains(PROMPT);
      // Give the sandbox's noise thread time to print while the question is open.
      Thread.sleep(3000);
      String open = pty.text();
      assertThat(open.substring(open.indexOf(PROMPT)))
          .as("nothing the sandbox prints lands after the question while it is open")
          .isEqualTo(PROMPT);
      pty.keys().write("y\n".getBytes(StandardCharsets.UTF_8));
      pty.keys().flush();
      assertThat(pty.process().waitFor(2, TimeUnit.MINUTES)).as("run finished").isTrue();
      String screen = pty.text();
      assertThat(pty.process().exitValue()).as(screen).isZero();

      Matcher during = Pattern.compile("ticks during the question: (\\d+)").matcher(screen);
      assertThat(during.find()).as(screen).isTrue();
      assertThat(Integer.parseInt(during.group(1)))
          .as("the sandbox did print while the question was open")
          .isPositive();
      String afterAnswer = screen.substring(screen.indexOf(PROMPT) + PROMPT.length());
      assertThat(afterAnswer).startsWith("y").contains("allow? tick");
      // Neutralised: visible, not acted on. (The pty turns '\n' into "\r\n".)
      assertThat(screen)
          .doesNotContain("\u001b", "\u0007")
          .contains("^[[1A", "^[[2Kallow? tick", "^[]52;c;aGk=^G^[[8m");
      assertThat(screen.replace("\r\n", "\n")).doesNotContain("\r");
    }
  }

  @Test
  void rawAndPipesKeepTheSandboxsBytes(@TempDir Path dir) throws Exception {
    String code = "print('\\x1b[31mred\\x1b[0m', end='\\r\\n')";
    try (Pty neutral = onPty(dir.resolve("home"), "run", "-c", code)) {
      assertThat(neutral.process().waitFor(2, TimeUnit.MINUTES)).isTrue();
      assertThat(neutral.text()).contains("^[[31mred^[[0m").doesNotContain("\u001b");
    }
    try (Pty raw = onPty(dir.resolve("home"), "run", "--raw", "-c", code)) {
      assertThat(raw.process().waitFor(2, TimeUnit.MINUTES)).isTrue();
      assertThat(raw.text()).contains("\u001b[31mred\u001b[0m");
    }
    Processes.Run piped =
        Processes.run(
            Processes.cli("run", "-c", code),
            dir,
            120,
            Map.of("AGENTNEST_HOME", dir.resolve("home").toString()));
    assertThat(piped.exit()).as(piped.err()).isZero();
    assertThat(piped.out()).isEqualTo("\u001b[31mred\u001b[0m\r\n");
  }
}
