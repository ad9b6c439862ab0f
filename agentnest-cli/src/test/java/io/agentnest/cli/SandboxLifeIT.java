package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.cli.Processes.Run;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.internal.support.Json;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A sandbox that lives across CLI processes, as a user drives it: {@code create}, then {@code
 * exec}, {@code code}, {@code extend}, {@code logs}, {@code rm}, each a separate {@code agentnest}
 * process on the real engine.
 */
@ExtendWith(DockerEngineRequired.class)
class SandboxLifeIT {
  @TempDir Path home;

  private final List<String> made = new ArrayList<>();

  private Run cli(String... args) throws Exception {
    return cliWithStdin(new byte[0], args);
  }

  private Run cliWithStdin(byte[] stdin, String... args) throws Exception {
    Run r =
        Processes.run(
            Processes.cli(args), home, 120, Map.of("AGENTNEST_HOME", home.toString()), stdin);
    assertThat(r.finished()).as("CLI finished: %s", r.err()).isTrue();
    return r;
  }

  private String create(String... more) throws Exception {
    List<String> args = new ArrayList<>(List.of("create", "--json"));
    args.addAll(List.of(more));
    Run r = cli(args.toArray(String[]::new));
    assertThat(r.exit()).as(r.err()).isZero();
    String id = Json.MAPPER.readTree(r.out()).path("id").asText();
    assertThat(id).isNotEmpty();
    made.add(id);
    return id;
  }

  @AfterEach
  void removeWhatATestLeft() throws Exception {
    for (String id : made) {
      cli("rm", id); // 6 when the test removed it already
    }
  }

  @Test
  void aCreatedSandboxOutlivesTheCommandAndRunsCommandsAndCodeFromLaterProcesses()
      throws Exception {
    String id = create("--ttl", "20m");
    String shortId = id.substring(0, 12);
    assertThat(cli("ls").out()).as("still there after 'create' exited").contains(shortId);
    Run dryPrune = cli("prune", "--dry-run", "--json");
    assertThat(dryPrune.out()).as("prune spares a detached sandbox").doesNotContain(id);

    Run exec = cli("exec", shortId, "--", "sh", "-c", "echo out; echo err >&2; exit 3");
    assertThat(exec.exit()).as(exec.err()).isEqualTo(3);
    assertThat(exec.out()).isEqualTo("out\n");
    assertThat(exec.err()).contains("err");

    assertThat(cli("code", id, "-c", "kept = 41").exit()).isZero();
    Run next = cli("code", id, "-c", "kept + 1");
    assertThat(next.exit()).as(next.err()).isZero();
    assertThat(next.out()).as("the session kept its variable across processes").isEqualTo("42\n");
    Run fromStdin =
        cliWithStdin("print(kept * 2)\n".getBytes(StandardCharsets.UTF_8), "code", id, "-f", "-");
    assertThat(fromStdin.out()).isEqualTo("82\n");
    Run json = cli("code", id, "-c", "import sys; sys.exit(4)", "--json");
    assertThat(json.exit()).isEqualTo(4);
    assertThat(Json.MAPPER.readTree(json.out()).path("error").path("name").asText())
        .isEqualTo("SystemExit");
    Run traceback = cli("code", id, "-c", "undefined_name");
    assertThat(traceback.exit()).isEqualTo(ExitCodes.FAILED);
    assertThat(traceback.err()).contains("NameError");
    Run stopped = cli("exec", id, "--timeout", "1s", "--", "sleep", "30");
    assertThat(stopped.exit()).as(stopped.err()).isEqualTo(ExitCodes.LIMIT);
    assertThat(cli("code", id, "-c", "kept").out())
        .as("a call stopped by a limit leaves the session")
        .isEqualTo("41\n");
  }

  @Test
  void extendMovesTheExpiryLaterAndLogsShowWhatRanUntilRmEndsIt() throws Exception {
    Run made = cli("create", "--json", "--ttl", "10m");
    assertThat(made.exit()).as(made.err()).isZero();
    JsonNode created = Json.MAPPER.readTree(made.out());
    String id = created.path("id").asText();
    this.made.add(id);
    Instant first = Instant.parse(created.path("expires_at").asText());

    Run extended = cli("extend", id, "1h", "--json");
    assertThat(extended.exit()).as(extended.err()).isZero();
    Instant later = Instant.parse(Json.MAPPER.readTree(extended.out()).path("expires_at").asText());
    assertThat(later).isAfterOrEqualTo(first.plusSeconds(3600));

    assertThat(cli("exec", id, "--", "echo", "logged-marker").exit()).isZero();
    Run logs = cli("logs", id);
    assertThat(logs.exit()).as(logs.err()).isZero();
    assertThat(logs.out())
        .contains(
            "sandbox.created",
            "exec.started",
            "exec.finished",
            "sandbox.extended",
            "logged-marker");

    Run rm = cli("rm", id);
    assertThat(rm.exit()).as(rm.err()).isZero();
    Run after = cli("logs", id, "--json");
    JsonNode last = null;
    for (String line : after.out().strip().split("\n")) {
      last = Json.MAPPER.readTree(line);
    }
    assertThat(last).isNotNull();
    assertThat(last.path("type").asText()).isEqualTo("sandbox.destroyed");
    assertThat(last.path("data").path("reason").asText()).contains("agentnest rm");
    Run audit = cli("audit", "--sandbox", id.substring(0, 12), "--type", "sandbox.destroyed");
    assertThat(audit.out()).contains("sandbox.destroyed");

    Run gone = cli("exec", id, "--", "true");
    assertThat(gone.exit()).isEqualTo(ExitCodes.NOT_FOUND);
    assertThat(gone.err()).contains("was destroyed", "agentnest create", "agentnest ls");
  }

  @Test
  void anUnknownIdIsNotFoundAndPointsAtLs() throws Exception {
    for (List<String> cmd :
        List.of(
            List.of("exec", "0000deadbeef00", "--", "true"),
            List.of("code", "0000deadbeef00", "-c", "1"),
            List.of("extend", "0000deadbeef00", "1h"))) {
      Run r = cli(cmd.toArray(String[]::new));
      assertThat(r.exit()).as(cmd + ": " + r.err()).isEqualTo(ExitCodes.NOT_FOUND);
      assertThat(r.err()).as(cmd.toString()).contains("agentnest ls");
    }
  }

  @Test
  void execOnATerminalShowsControlSequencesInsteadOfObeyingThem() throws Exception {
    String id = create();
    try (RunTerminalIT.Pty pty =
        RunTerminalIT.onPty(home, "exec", id, "--", "printf", "\\033[31mred\\033]52;c;aGk=\\007")) {
      assertThat(pty.process().waitFor(2, TimeUnit.MINUTES)).isTrue();
      assertThat(pty.text()).contains("^[[31mred^[]52;c;aGk=^G").doesNotContain("\u001b");
    }
  }

  @Test
  void codeReadsAFileAndNamedSessionsAreSeparate(@TempDir Path dir) throws Exception {
    String id = create();
    Path f = Files.writeString(dir.resolve("a.py"), "where = 'default'\n");
    assertThat(cli("code", id, "-f", f.toString()).exit()).isZero();
    assertThat(cli("code", id, "--session", "side", "-c", "where = 'side'").exit()).isZero();
    assertThat(cli("code", id, "-c", "where").out()).isEqualTo("'default'\n");
    assertThat(cli("code", id, "--session", "side", "-c", "where").out()).isEqualTo("'side'\n");
  }

  @Test
  void shellRunsOnAPtySizedToTheWindowFollowsItAndShowsClipboardWritesInsteadOfObeying()
      throws Exception {
    String id = create();
    Path driver = Path.of("src/test/resources/io/agentnest/cli/pty_drive.py").toAbsolutePath();
    String steps =
        Json.MAPPER.writeValueAsString(
            List.of(
                Map.of("expect", "$ "), // the prompt: a person types once it is there
                Map.of("send", "stty size\r"),
                Map.of("expect", "30 100"),
                Map.of("resize", List.of(40, 120)),
                Map.of("sleep", 2),
                Map.of("send", "stty size\r"),
                Map.of("expect", "40 120"),
                Map.of("send", "printf '\\033]52;c;aGk=\\007\\033[31mred\\n'\r"),
                Map.of("expect", "red"),
                Map.of("send", "sleep 30\r"),
                Map.of("sleep", 1),
                Map.of("send", "\u0003"),
                Map.of("send", "echo $((1000+1))\r"),
                Map.of("expect", "1001", "s", 20),
                Map.of("send", "exit 5\r")));
    List<String> cmd =
        new ArrayList<>(List.of("python3", driver.toString(), "30", "100", steps, "--"));
    cmd.addAll(Processes.cli("shell", id));
    Run r =
        Processes.run(cmd, home, 240, Map.of("AGENTNEST_HOME", home.toString(), "TERM", "xterm"));
    assertThat(r.finished()).as(r.err()).isTrue();
    String screen = r.out();
    assertThat(r.exit())
        .as("the shell's exit status; screen:%n%s%nerr: %s", screen, r.err())
        .isEqualTo(5);
    assertThat(screen)
        .as("the clipboard write is shown, the colour works")
        .contains("^[]52;c;aGk=^G", "\u001b[31mred")
        .doesNotContain("\u001b]52");
    assertThat(cli("logs", id).out()).as("the shell is audited as a call").contains("exec.started");
  }

  @Test
  void endingTheCliStopsItsCallSoTheSessionIsFreeAndKeepsItsVariables() throws Exception {
    String id = create();
    assertThat(cli("code", id, "-c", "kept = 'still here'").exit()).isZero();
    ProcessBuilder pb =
        new ProcessBuilder(
                Processes.cli(
                    "code",
                    id,
                    "--timeout",
                    "10m",
                    "-c",
                    "import time\nprint('busy', flush=True)\ntime.sleep(600)"))
            .redirectErrorStream(true);
    pb.environment().put("AGENTNEST_HOME", home.toString());
    Process busy = pb.start();
    try (var out = busy.getInputStream()) {
      byte[] first = new byte[4];
      assertThat(out.readNBytes(first, 0, 4)).as("the call started").isEqualTo(4);
      assertThat(new String(first, StandardCharsets.UTF_8)).isEqualTo("busy");
      busy.destroy(); // SIGTERM, as a closed terminal or ^C ends the CLI
      assertThat(busy.waitFor(30, TimeUnit.SECONDS)).as("the CLI ended").isTrue();
    } finally {
      busy.destroyForcibly();
    }
    Run next =
        Processes.run(
            Processes.cli("code", id, "-c", "kept"),
            home,
            60,
            Map.of("AGENTNEST_HOME", home.toString()));
    assertThat(next.finished())
        .as("the session was not left busy for ten minutes: %s%s", next.out(), next.err())
        .isTrue();
    assertThat(next.out()).isEqualTo("'still here'\n");
  }
}
