package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.jspecify.annotations.Nullable;
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
      @Nullable Object keyBefore = fileKey(DOCKERD_LOG);
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
      // The running daemon's log is neither truncated nor replaced (other tests' containers may
      // still make it grow meanwhile: only shrinking or a new file is the launcher's doing).
      Optional<Long> logAfter = size(DOCKERD_LOG);
      assertThat(logAfter.isPresent()).isEqualTo(logBefore.isPresent());
      if (logBefore.isPresent() && logAfter.isPresent()) {
        assertThat(logAfter.get()).isGreaterThanOrEqualTo(logBefore.get());
        assertThat(fileKey(DOCKERD_LOG)).isEqualTo(keyBefore);
      }
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

  @Test
  void pipsEggInfoAndPythonCachesDoNotRebuildTheCli(@TempDir Path dir) throws Exception {
    // A checkout in miniature: the launcher, a module with a source, agentnest-python (no
    // pom.xml), and the built jar (a link to the real one, so --version runs).
    Path root = dir.resolve("checkout");
    FileTime old = FileTime.from(Instant.now().minus(Duration.ofHours(1)));
    Path launcher = root.resolve("agentnest");
    Files.createDirectories(root);
    Files.copy(LAUNCHER, launcher);
    Path source = root.resolve("agentnest-core/src/main/java/A.java");
    for (Path f :
        List.of(root.resolve("pom.xml"), root.resolve("agentnest-core/pom.xml"), source)) {
      Files.createDirectories(f.getParent());
      Files.writeString(f, "");
      Files.setLastModifiedTime(f, old);
    }
    Path jar = root.resolve("agentnest-cli/target/agentnest.jar");
    Files.createDirectories(jar.getParent());
    Files.createSymbolicLink(jar, REPO.resolve("agentnest-cli/target/agentnest.jar"));
    // What `pip install ./agentnest-python` and a Python test run leave behind, after the build.
    for (Path f :
        List.of(
            root.resolve("agentnest-python/src/agentnest.egg-info/PKG-INFO"),
            root.resolve("agentnest-python/src/agentnest/__init__.py"),
            root.resolve("agentnest-core/src/test/python/__pycache__/t.cpython-311.pyc"))) {
      Files.createDirectories(f.getParent());
      Files.writeString(f, "");
    }
    Map<String, String> env = Map.of("AGENTNEST_HOME", dir.resolve("h").toString());
    Processes.Run r = Processes.run(List.of(launcher.toString(), "--version"), root, 120, env);
    assertThat(r.exit()).as("%s", r.err()).isZero();
    assertThat(r.err()).doesNotContain("rebuilding");
    // A module's source newer than the jar still rebuilds (here it fails at once: no mvnw).
    Files.setLastModifiedTime(source, FileTime.from(Instant.now().plus(Duration.ofMinutes(1))));
    Processes.Run changed =
        Processes.run(List.of(launcher.toString(), "--version"), root, 120, env);
    assertThat(changed.err()).contains("sources changed: rebuilding the CLI");
    assertThat(changed.exit()).isNotZero();
  }

  private static Optional<Long> size(Path p) throws IOException {
    return Files.exists(p) ? Optional.of(Files.size(p)) : Optional.empty();
  }

  private static @Nullable Object fileKey(Path p) throws IOException {
    return Files.exists(p) ? Files.readAttributes(p, BasicFileAttributes.class).fileKey() : null;
  }

  private static long dockerds() {
    return ProcessHandle.allProcesses()
        .filter(h -> h.info().command().map(c -> c.endsWith("/dockerd")).orElse(false))
        .count();
  }
}
