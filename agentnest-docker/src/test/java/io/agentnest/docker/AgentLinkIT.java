package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;

import com.github.dockerjava.api.command.InspectContainerResponse;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.docker.internal.DockerEngine;
import io.agentnest.spi.Labels;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The agent link on runc: the channel is a socket the agent connected to at start, not the engine's
 * attach stream; its listener is gone before anything runs in the sandbox, the token never reaches
 * sandbox code, and a host that attaches later gets the agent back over attach. Reads other
 * processes' /proc entries, which this suite does as root (CI's machine).
 */
@ExtendWith(DockerEngineRequired.class)
class AgentLinkIT {
  @TempDir static Path home;
  static TestHome isolated;

  @BeforeAll
  static void isolateHostState() {
    isolated = TestHome.use(home);
  }

  @AfterAll
  static void restore() {
    isolated.close();
    System.clearProperty("agentnest.docker.channel");
  }

  @Test
  void theChannelIsTheAgentsOwnSocketAndItsListenerIsGoneBeforeAnythingRuns() throws Exception {
    try (Sandbox sb = Sandbox.create(SandboxConfig.builder().build())) {
      InspectContainerResponse c =
          DockerEngine.connect().client().inspectContainerCmd(sb.id()).exec();
      assertThat(List.of(c.getConfig().getEnv()))
          .as("the engine's copy holds the one-time token")
          .anyMatch(e -> e.startsWith("AGENTNEST_LINK=/run/agentnest/agent.sock:"));
      assertThat(agentFds(c)).as("the agent's channel").anyMatch(l -> l.startsWith("socket:"));
      Path bulk = Path.of(c.getConfig().getLabels().get(Labels.BULK_DIR));
      assertThat(bulk.resolve("agent.sock")).doesNotExist();

      assertThat(
              sb.runCode(
                      "import os, socket\n"
                          + "s = socket.socket(socket.AF_UNIX)\n"
                          + "try:\n"
                          + "    s.connect('/run/agentnest/agent.sock'); r = 'CONNECTED'\n"
                          + "except OSError as e:\n"
                          + "    r = type(e).__name__\n"
                          + "(r, os.environ.get('AGENTNEST_LINK'))")
                  .result())
          .isEqualTo("('FileNotFoundError', None)");
      assertThat(
              sb.exec(
                      "cat /proc/1/environ /proc/$PPID/environ 2>&1 | tr '\\0' '\\n';"
                          + " env | grep -c AGENTNEST_LINK")
                  .stdout())
          .doesNotContain("agent.sock:")
          .endsWith("0\n");
    }
  }

  @Test
  void aHostThatAttachesAfterTheLinkEndedGetsTheAgentAndItsSessionBack() {
    Sandbox sb = Sandbox.create(SandboxConfig.builder().build());
    String id = sb.id();
    try {
      assertThat(sb.runCode("x = 41; x").result()).isEqualTo("41");
      sb.detach();
      try (Sandbox again = Sandbox.connect(id)) {
        assertThat(again.runCode("x + 1").result()).isEqualTo("42");
        assertThat(again.exec("echo over attach").stdout()).isEqualTo("over attach\n");
      }
    } finally {
      sb.close();
    }
  }

  @Test
  void aSecondHostAttachedWhileTheCreatorHoldsTheLinkIsAnsweredAndSoIsTheCreator() {
    try (Sandbox sb = Sandbox.create(SandboxConfig.builder().build())) {
      sb.runCode("y = 'shared'");
      Sandbox second = Sandbox.connect(sb.id());
      try {
        for (int i = 0; i < 5; i++) {
          assertThat(second.runCode("y + '" + i + "'").result()).isEqualTo("'shared" + i + "'");
          assertThat(sb.exec("echo creator " + i).stdout()).isEqualTo("creator " + i + "\n");
        }
        assertThat(second.exec("echo second").stdout()).isEqualTo("second\n");
      } finally {
        second.detach();
      }
      assertThat(sb.runCode("y").result()).isEqualTo("'shared'");
    }
  }

  @Test
  void attachAsTheChannelKeepsEveryFrameOnTheEnginesStream() throws Exception {
    System.setProperty("agentnest.docker.channel", "attach");
    try (Sandbox sb = Sandbox.create(SandboxConfig.builder().build())) {
      InspectContainerResponse c =
          DockerEngine.connect().client().inspectContainerCmd(sb.id()).exec();
      assertThat(List.of(c.getConfig().getEnv())).noneMatch(e -> e.startsWith("AGENTNEST_LINK="));
      assertThat(agentFds(c)).noneMatch(l -> l.startsWith("socket:"));
      assertThat(sb.runCode("1 + 1").result()).isEqualTo("2");
    } finally {
      System.clearProperty("agentnest.docker.channel");
    }
  }

  /** Where the agent's fds point (the bootstrap, pid 1, has one child: the agent). */
  private static List<String> agentFds(InspectContainerResponse c) throws IOException {
    long pid = c.getState().getPidLong();
    String kids = Files.readString(Path.of("/proc/" + pid + "/task/" + pid + "/children")).strip();
    assertThat(kids).as("pid 1's children").isNotEmpty();
    long agent = Long.parseLong(kids.split(" ")[0]);
    List<String> out = new ArrayList<>();
    try (Stream<Path> fds = Files.list(Path.of("/proc/" + agent + "/fd"))) {
      for (Path fd : (Iterable<Path>) fds::iterator) {
        try {
          out.add(Files.readSymbolicLink(fd).toString());
        } catch (IOException e) {
          // closed while listed
        }
      }
    }
    return out;
  }
}
