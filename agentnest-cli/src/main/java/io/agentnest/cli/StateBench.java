package io.agentnest.cli;

import io.agentnest.AgentNestException;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SnapshotInfo;
import io.agentnest.spi.support.AgentNestHome;
import io.agentnest.spi.support.HostFiles;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** {@code bench --only fork,snapshot,artifacts}: what moving a sandbox's state costs. */
final class StateBench {
  private StateBench() {}

  /**
   * fork() and fork(4) of a loaded sandbox, with spare copies ready (prepareForks, made again
   * between samples) and once without them; each copy is destroyed outside the measurement.
   */
  static void fork(
      SandboxConfig config,
      int iterations,
      int warmup,
      PrintStream info,
      Map<String, double[]> samples) {
    try (Sandbox sb = Sandbox.create(config.toBuilder().memory("1g").build())) {
      sb.exec("head -c 10000000 /dev/urandom > /workspace/data.bin");
      BenchCommand.check(
          sb.runCode(
              "import os\nblobs = [os.urandom(1 << 20) for _ in range(90)]\n"
                  + "table = {i: str(i) * 10 for i in range(200000)}\nlen(blobs)"),
          "90");
      int n = Math.max(3, iterations / 5);
      List<Sandbox> garbage = new ArrayList<>();
      Runnable clean =
          () -> {
            garbage.forEach(Sandbox::destroy);
            garbage.clear();
          };
      int warm = Math.min(warmup, 1);
      String[] path = {"unknown"};
      samples.put(
          "fork",
          BenchSteps.measure(
              "fork",
              n,
              warm,
              () -> {
                clean.run();
                sb.prepareForks(1);
              },
              () -> {
                Sandbox copy = sb.fork();
                garbage.add(copy);
                copy.forkReport().ifPresent(r -> path[0] = r.mode().name());
              }));
      info.println("fork path: " + path[0]);
      samples.put(
          "fork(4)",
          BenchSteps.measure(
              "fork(4)",
              n,
              warm,
              () -> {
                clean.run();
                sb.prepareForks(4);
              },
              () -> garbage.addAll(sb.fork(4))));
      clean.run();
      sb.prepareForks(0);
      samples.put(
          "fork, no spares",
          BenchSteps.measure("fork, no spares", n, warm, clean, () -> garbage.add(sb.fork())));
      clean.run();
    }
  }

  /** Save and restore of a sandbox with 10 MB of files and 10 MB of session state. */
  static void snapshot(
      SandboxConfig config,
      int iterations,
      int warmup,
      PrintStream info,
      Map<String, double[]> samples) {
    String before = System.getProperty("agentnest.home");
    Path home;
    try {
      home = Files.createTempDirectory("agentnest-snapshot-bench-");
    } catch (IOException ex) {
      throw new AgentNestException("cannot create a temporary directory: " + ex.getMessage(), ex);
    }
    if (config.backend().equals(SandboxConfig.MICROVM)) {
      // Guest images live under the home: the temporary one sees the built ones.
      Path images = AgentNestHome.dir().resolve("microvm").resolve("images");
      try {
        Files.createDirectories(home.resolve("microvm"));
        Files.createSymbolicLink(home.resolve("microvm").resolve("images"), images);
      } catch (IOException ex) {
        throw new AgentNestException("cannot link " + images + ": " + ex.getMessage(), ex);
      }
    }
    System.setProperty("agentnest.home", home.toString());
    try (Sandbox sb = Sandbox.create(config)) {
      sb.exec("head -c 10000000 /dev/urandom > /workspace/data.bin");
      // gen cannot be pickled: only a snapshot with process memory (gVisor, microVM) brings it
      // back.
      BenchCommand.check(
          sb.runCode(
              "import os\nblobs = [os.urandom(1 << 20) for _ in range(10)]\n"
                  + "gen = (i for i in range(10))\nnext(gen)\nlen(blobs)"),
          "10");
      int n = Math.max(3, iterations / 5);
      int[] i = {0};
      samples.put(
          "snapshot save 10 MB files + 10 MB session",
          BenchSteps.measure(
              "snapshot save", n, Math.min(warmup, 1), () -> sb.snapshot("b" + i[0]++)));
      SnapshotInfo saved =
          Sandbox.snapshots().stream().filter(s -> s.name().equals("b0")).findFirst().orElseThrow();
      long parts = 0;
      StringBuilder sizes = new StringBuilder();
      Path b0 = home.resolve("snapshots").resolve("b0");
      try (var files = Files.walk(b0, 3)) {
        for (Path f : files.filter(Files::isRegularFile).sorted().limit(1000).toList()) {
          long size = Files.size(f);
          parts += size;
          sizes.append(String.format(" %s %.1f MB,", b0.relativize(f), size / 1e6));
        }
      } catch (IOException ex) {
        throw new AgentNestException("cannot read the snapshot: " + ex.getMessage(), ex);
      }
      info.printf(
          "snapshot size: %.1f MB of parts, %d bytes on disk with the manifest (%s"
              + " sessions %s); process memory: %s%n",
          saved.bytes() / 1e6,
          parts,
          sizes.toString().strip(),
          saved.sessions(),
          saved.memory() ? "yes (checkpoint)" : "no (" + saved.memoryNote() + ")");
      List<Sandbox> garbage = new ArrayList<>();
      samples.put(
          "snapshot restore",
          BenchSteps.measure(
              "snapshot restore",
              n,
              Math.min(warmup, 1),
              () -> garbage.add(Sandbox.restore("b0"))));
      try {
        if (!garbage.isEmpty()) {
          Sandbox first = garbage.get(0);
          BenchCommand.check(first.runCode("len(blobs)"), "10");
          BenchCommand.check(
              first.runCode("'gen' in globals() and next(gen)"), saved.memory() ? "1" : "False");
        }
      } finally {
        garbage.forEach(Sandbox::destroy);
      }
    } finally {
      if (before == null) {
        System.clearProperty("agentnest.home");
      } else {
        System.setProperty("agentnest.home", before);
      }
      try {
        HostFiles.deleteTree(home);
      } catch (IOException ignored) {
        // a temporary directory
      }
    }
  }

  /** Export and upload of 100 files, 10 MB in all. */
  static void artifacts(
      SandboxConfig config, int iterations, int warmup, Map<String, double[]> samples) {
    Path dir;
    try {
      dir = Files.createTempDirectory("agentnest-artifacts-bench-");
    } catch (IOException ex) {
      throw new AgentNestException("cannot create a temporary directory: " + ex.getMessage(), ex);
    }
    try (Sandbox sb = Sandbox.create(config)) {
      BenchCommand.check(
          sb.runCode(
              "import os\nos.makedirs('output', exist_ok=True)\n"
                  + "for i in range(100):\n"
                  + "    open(f'output/f{i:03}.bin', 'wb').write(os.urandom(100_000))\n"
                  + "len(os.listdir('output'))"),
          "100");
      int[] round = {0};
      int n = Math.max(3, iterations / 5);
      samples.put(
          "artifacts export 100 files 10 MB",
          BenchSteps.measure(
              "artifacts export",
              n,
              Math.min(warmup, 1),
              () -> sb.exportArtifacts("output/*.bin", dir.resolve("r" + round[0]++))));
      Path source = dir.resolve("r0").resolve("output");
      samples.put(
          "upload 100 files 10 MB",
          BenchSteps.measure(
              "upload",
              n,
              Math.min(warmup, 1),
              () -> sb.upload(source, "uploaded/u" + round[0]++)));
    } finally {
      try {
        HostFiles.deleteTree(dir);
      } catch (IOException ignored) {
        // a temporary directory
      }
    }
  }
}
