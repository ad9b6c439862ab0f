package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The source checkout's launcher ({@code ./agentnest}) as a newcomer runs it: it prepares the host
 * only for the host's own default engine, never for one the user points at, and help touches
 * nothing.
 */
class LauncherIT {
  private static final Path REPO = Path.of("").toAbsolutePath().getParent();
  private static final Path LAUNCHER = REPO.resolve("agentnest");
  private static final Path DOCKERD_LOG = Path.of("/var/log/agentnest/dockerd.log");

  @Test
  void aDockerHostThatIsDownFailsInSecondsAndTouchesNoDaemonOrLog(@TempDir Path dir)
      throws Exception {
    // The user's engine, down: its socket is gone. (A socket that accepts and never answers
    // hangs docker-java without a read timeout: noted in the issue, not covered here.)
    Path sock = dir.resolve("docker.sock");
    {
      Optional<Long> logBefore = size(DOCKERD_LOG);
      long daemonsBefore = dockerds();
      Processes.Run r =
          Processes.run(
              List.of(LAUNCHER.toString(), "run", "-c", "print(1)"),
              REPO,
              120,
              Map.of(
                  "DOCKER_HOST", "unix://" + sock, "AGENTNEST_HOME", dir.resolve("h").toString()));
      assertThat(r.finished()).as("ended by itself: %s", r.err()).isTrue();
      assertThat(r.exit()).isEqualTo(ExitCodes.BACKEND_UNAVAILABLE);
      assertThat(r.err()).doesNotContain("[setup]").doesNotContain("preparing this host");
      assertThat(size(DOCKERD_LOG)).isEqualTo(logBefore);
      assertThat(dockerds()).isEqualTo(daemonsBefore);
    }
  }

  @Test
  void helpAndVersionPrepareNothing(@TempDir Path dir) throws Exception {
    for (List<String> args :
        List.of(List.of("doctor", "--help"), List.of("bench", "--help"), List.of("--version"))) {
      Processes.Run r =
          Processes.run(
              Stream.concat(Stream.of(LAUNCHER.toString()), args.stream()).toList(),
              REPO,
              120,
              Map.of("AGENTNEST_HOME", dir.toString()));
      assertThat(r.exit()).as("%s: %s", args, r.err()).isZero();
      assertThat(r.err())
          .as("%s", args)
          .doesNotContain("[setup]")
          .doesNotContain("preparing this host");
    }
  }

  @Test
  void aSymlinkOnThePathRunsTheCheckoutItPointsAt(@TempDir Path dir) throws Exception {
    // README: ln -s "$PWD/agentnest" /usr/local/bin/agentnest. The launcher once took the link's
    // directory for the checkout and tried to build there ("./mvnw: No such file or directory").
    Path bin = Files.createDirectory(dir.resolve("bin"));
    Path link = Files.createSymbolicLink(bin.resolve("agentnest"), LAUNCHER);
    Processes.Run r =
        Processes.run(
            List.of(link.toString(), "--version"),
            dir,
            120,
            Map.of("AGENTNEST_HOME", dir.resolve("h").toString()));
    assertThat(r.exit()).as("%s", r.err()).isZero();
    assertThat(r.out()).startsWith("agentnest ");
    try (Stream<Path> left = Files.list(bin)) {
      assertThat(left).as("nothing built or logged beside the link").containsExactly(link);
    }
  }

  private static Optional<Long> size(Path p) throws IOException {
    return Files.exists(p) ? Optional.of(Files.size(p)) : Optional.empty();
  }

  private static long dockerds() {
    return ProcessHandle.allProcesses()
        .filter(h -> h.info().command().map(c -> c.endsWith("/dockerd")).orElse(false))
        .count();
  }
}
