package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.docker.DockerEngineRequired;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A process that owns a sandbox and is stopped by a signal destroys it on its way out: only SIGKILL
 * leaves anything to the owner-pid label and {@code prune}.
 */
@ExtendWith(DockerEngineRequired.class)
class ExitCleanupIT {

  @Test
  void sigtermOnRunDestroysItsSandboxAndAuditsWhy(@TempDir Path home) throws Exception {
    assertStopDestroys(home, false);
  }

  @Test
  void ctrlCOnRunDestroysItsSandboxAndExitsWith130(@TempDir Path home) throws Exception {
    assertStopDestroys(home, true);
  }

  private static void assertStopDestroys(Path home, boolean interrupt) throws Exception {
    ProcessBuilder pb =
        new ProcessBuilder(Processes.cli("run", "--", "sleep", "60"))
            .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .redirectError(home.resolve("err.txt").toFile());
    pb.environment().put("AGENTNEST_HOME", home.toString());
    Process p = pb.start();
    try {
      String owner = ":" + p.pid() + ":";
      String id = "";
      // Bounded: the sandbox appears within two minutes on a loaded host, or the test fails.
      for (int i = 0; i < 240 && id.isEmpty(); i++) {
        id = containerOwnedBy(owner);
        if (id.isEmpty()) {
          Thread.sleep(500);
        }
      }
      assertThat(id).as("the run's sandbox appeared: %s", err(home)).isNotEmpty();
      // Give the run a moment to be in its execution, as a person pressing Ctrl-C would be.
      Thread.sleep(1_000);
      if (interrupt) {
        new ProcessBuilder("kill", "-INT", Long.toString(p.pid())).start().waitFor();
      } else {
        p.destroy(); // SIGTERM
      }
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("exited: %s", err(home)).isTrue();
      assertThat(p.exitValue()).isEqualTo(interrupt ? 130 : 143);
      assertThat(containerOwnedBy(owner)).as("no container left").isEmpty();
      Processes.Run audit =
          Processes.run(
              Processes.cli("audit", "--sandbox", id, "--type", "sandbox.destroyed", "--json"),
              Path.of("."),
              60,
              Map.of("AGENTNEST_HOME", home.toString()));
      assertThat(audit.out()).contains("the process that owned it exited");
    } finally {
      p.destroyForcibly();
    }
  }

  private static String containerOwnedBy(String owner) throws IOException, InterruptedException {
    Processes.Run r =
        Processes.run(
            List.of(
                "docker",
                "ps",
                "-a",
                "--no-trunc",
                "--filter",
                "label=agentnest.managed",
                "--format",
                "{{.ID}} {{.Label \"agentnest.owner\"}}"),
            Path.of("."),
            30);
    for (String line : r.out().split("\n")) {
      String[] f = line.split(" ", 2);
      if (f.length == 2 && f[1].contains(owner)) {
        return f[0];
      }
    }
    return "";
  }

  private static String err(Path home) throws IOException {
    Path f = home.resolve("err.txt");
    return Files.exists(f) ? Files.readString(f, StandardCharsets.UTF_8) : "";
  }
}
