package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.AgentNestException;
import io.agentnest.ForkReport;
import io.agentnest.NetworkPolicy;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import io.agentnest.docker.internal.DockerEngine;
import io.agentnest.spi.Labels;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** fork() on runc: files and session state are copied, and copies are independent both ways. */
@ExtendWith(DockerEngineRequired.class)
class ForkIT {
  static Sandbox parent;

  @BeforeAll
  static void start() {
    parent = Sandbox.create();
    parent.exec(
        "mkdir -p /workspace/data && echo parent > /workspace/data/f.txt"
            + " && echo scratch > /tmp/s.txt");
    parent.runCode(
        "import json, collections\n"
            + "counter = collections.Counter('abracadabra')\n"
            + "shared = [1, 2]\nalias = shared\n"
            + "class Point:\n    def __init__(self, x): self.x = x\n"
            + "    def double(self): return Point(self.x * 2)\n"
            + "p = Point(21)\nscale = 3\n"
            + "def scaled(v):\n    return v * scale\n"
            + "gen = (i for i in range(3))\n");
    parent.pythonSession("other").run("other_var = 'kept'");
  }

  @AfterAll
  static void stop() {
    if (parent != null) {
      parent.destroy();
    }
  }

  @Test
  void copyHasTheFilesVariablesFunctionsAndClassesAndSaysWhatItCouldNotCarry() {
    try (Sandbox copy = parent.fork()) {
      assertThat(copy.id()).isNotEqualTo(parent.id());
      assertThat(copy.exec("cat /workspace/data/f.txt /tmp/s.txt").stdout())
          .isEqualTo("parent\nscratch\n");
      assertThat(copy.runCode("p.double().x, scaled(2), counter['a'], json.dumps([1])").result())
          .isEqualTo("(42, 6, 5, '[1]')");
      assertThat(copy.runCode("alias.append(3); shared").result())
          .as("objects shared between variables stay shared")
          .isEqualTo("[1, 2, 3]");
      assertThat(copy.runCode("scale = 10; scaled(2)").result())
          .as("functions see the session's globals, not a copy of them")
          .isEqualTo("20");
      assertThat(copy.pythonSession("other").run("other_var").result()).isEqualTo("'kept'");

      ForkReport r = copy.forkReport().orElseThrow();
      assertThat(r.mode()).isEqualTo(ForkReport.Mode.STATE_TRANSFER);
      assertThat(r.parentId()).isEqualTo(parent.id());
      assertThat(r.sessions().get("default")).contains("counter", "p", "Point", "scaled");
      assertThat(r.skipped()).extracting(ForkReport.Skipped::name).containsExactly("gen");
      assertThat(r.skipped().get(0).type()).isEqualTo("generator");
      assertThat(r.fileBytes()).isPositive();
      assertThat(r.stateBytes()).isPositive();
      assertThat(copy.runCode("'gen' in globals()").result()).isEqualTo("False");
      assertThat(parent.forkReport()).isEmpty();
    }
  }

  @Test
  void parentAndCopyNeverSeeEachOthersLaterWrites() {
    try (Sandbox copy = parent.fork()) {
      copy.exec("echo copy > /workspace/data/f.txt && touch /workspace/only-copy");
      copy.runCode("scale = 100\nnew_in_copy = 1");
      parent.exec("touch /workspace/only-parent");
      parent.runCode("only_parent = 1");

      assertThat(parent.exec("cat /workspace/data/f.txt").stdout()).isEqualTo("parent\n");
      assertThat(parent.files().exists("only-copy")).isFalse();
      assertThat(parent.runCode("scale, 'new_in_copy' in globals()").result())
          .isEqualTo("(3, False)");
      assertThat(copy.files().exists("only-parent")).isFalse();
      assertThat(copy.runCode("'only_parent' in globals()").result()).isEqualTo("False");
      // Processes are not shared either.
      parent.exec("sleep 300 > /dev/null 2>&1 &");
      assertThat(copy.exec("pgrep -x sleep || echo none").stdout()).isEqualTo("none\n");
      parent.exec("pkill -x sleep || true");
    }
  }

  @Test
  void forkOfSeveralCopiesGivesIndependentSandboxes() {
    List<Sandbox> copies = parent.fork(3);
    try {
      assertThat(copies).hasSize(3).extracting(Sandbox::id).doesNotHaveDuplicates();
      for (int i = 0; i < copies.size(); i++) {
        copies.get(i).runCode("mine = " + i);
      }
      for (int i = 0; i < copies.size(); i++) {
        assertThat(copies.get(i).runCode("mine, p.x").result()).isEqualTo("(" + i + ", 21)");
      }
    } finally {
      copies.forEach(Sandbox::destroy);
    }
  }

  @Test
  void sessionStateTravelsOverTheBulkLinkWhichListensOnlyDuringTheFork(@TempDir Path dir) {
    try (AuditLog log = AuditLog.open(dir);
        Sandbox p = Sandbox.create(SandboxConfig.builder().auditLog(log).build())) {
      p.runCode("import os\nblob = os.urandom(3 << 20)\nfh = open('/etc/hostname')\nn = 7");
      try (Sandbox copy = p.fork()) {
        assertThat(copy.runCode("len(blob), blob == bytes(blob), n").result())
            .isEqualTo("(3145728, True, 7)");
        assertThat(p.runCode("import hashlib; hashlib.sha256(blob).hexdigest()").result())
            .isEqualTo(copy.runCode("import hashlib; hashlib.sha256(blob).hexdigest()").result());
        ForkReport r = copy.forkReport().orElseThrow();
        assertThat(r.stateBytes()).isGreaterThan(3L << 20);
        assertThat(r.skipped()).extracting(ForkReport.Skipped::name).containsExactly("fh");
        for (Sandbox s : List.of(p, copy)) {
          assertThat(s.exec("ls -A /run/agentnest | wc -l").stdout().strip())
              .as("no socket is left behind")
              .isEqualTo("0");
        }
        List<AuditEvent> forked =
            log.query(AuditQuery.builder().sandbox(p.id()).type("sandbox.forked").build());
        assertThat(forked).hasSize(1);
        assertThat(forked.get(0).data()).containsEntry("link", "bulk");
      }
    }
  }

  @Test
  void aSessionThatDiesWhileItsStateStreamsFailsTheForkCleanlyAndLeavesNoCopy() {
    Set<String> before = mine();
    try (Sandbox p = Sandbox.create()) {
      // Pickling the bomb ends the session's interpreter part-way through the stream.
      p.runCode(
          "import os\nblob = os.urandom(8 << 20)\n"
              + "class Bomb:\n    def __reduce__(self):\n        os._exit(3)\n"
              + "zz_bomb = Bomb()");
      assertThatThrownBy(p::fork)
          .isInstanceOf(AgentNestException.class)
          .hasMessageContaining("interpreter exited (code 3) while saving its state");
      assertThat(p.isAlive()).isTrue();
      assertThat(p.runCode("1 + 1").result()).isEqualTo("2");
      Awaitility.await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> mine().size() == before.size() + 1);
    }
  }

  @Test
  void aSessionStreamingFarMoreThanItsStateFailsTheForkAndLeavesNoCopy(@TempDir Path dir) {
    Set<String> before = mine();
    try (AuditLog log = AuditLog.open(dir);
        Sandbox p = Sandbox.create(SandboxConfig.builder().memory("256m").auditLog(log).build())) {
      // Code in the session replaces the worker's save with a stream of up to 3 GiB of well-framed
      // garbage (what a compromised sandbox can send): the host must neither hold it nor leave the
      // copies running when the fork fails.
      p.runCode(
          "import sys, struct\n"
              + "_f = sys._getframe()\n"
              + "while _f is not None and '_dump_bulk' not in _f.f_globals:\n"
              + "    _f = _f.f_back\n"
              + "_w = _f.f_globals\n"
              + "def _flood(ns, bulk):\n"
              + "    s = _w['_bulk_connect'](bulk)\n"
              + "    try:\n"
              + "        s.sendall(struct.pack('>I', 0))\n"
              + "        chunk = struct.pack('>I', 1 << 20) + bytes(1 << 20)\n"
              + "        for i in range(3072):\n"
              + "            s.sendall(chunk)\n"
              + "        s.sendall(b'\\0\\0\\0\\0')\n"
              + "    except OSError:\n"
              + "        pass\n"
              + "    finally:\n"
              + "        s.close()\n"
              + "    return {'vars': [], 'skipped': [], 'extra_bytes': 0, 'bulk': 3 << 30}\n"
              + "_w['_dump_bulk'] = _flood\n");
      assertThatThrownBy(p::fork)
          .isInstanceOf(AgentNestException.class)
          .hasMessageContaining("is larger than " + (2 * (256L << 20) + (64L << 20)) + " bytes")
          .hasMessageContaining("twice its memory limit");
      assertThat(p.runCode("1 + 1").result()).isEqualTo("2");
      Awaitility.await()
          .atMost(Duration.ofSeconds(60))
          .until(() -> mine().size() == before.size() + 1);
    }
  }

  @Test
  void aLargeStateForksWhileTheHostHeapAndDirectMemoryAreSmall(@TempDir Path home)
      throws Exception {
    // 150 MiB of session state through a host JVM with 128 MiB of heap and 80 MiB of direct
    // memory: only a bounded relay gets it across (the old one held the whole stream).
    Process child =
        ChildJvm.start(
            LargeFork.class,
            List.of("-Xmx128m", "-XX:MaxDirectMemorySize=80m"),
            Map.of("AGENTNEST_HOME", home.toString()));
    try {
      List<String> lines = ChildJvm.readUntil(child, "result", 20);
      assertThat(child.waitFor(5, TimeUnit.MINUTES)).isTrue();
      assertThat(lines).as("child output").contains("result " + (150 << 20) + " True");
      assertThat(child.exitValue()).isZero();
    } finally {
      child.destroyForcibly();
    }
  }

  /** Forks a 256 MiB sandbox holding 150 MiB of session state; prints what the copy holds. */
  public static final class LargeFork {
    public static void main(String[] args) {
      try (Sandbox p = Sandbox.create(SandboxConfig.builder().memory("256m").build())) {
        p.runCode("blob = b'ab' * (75 << 20)");
        try (Sandbox copy = p.fork()) {
          System.out.println(
              "result "
                  + copy.runCode("str(len(blob)) + ' ' + str(blob[:4] == b'abab')")
                      .result()
                      .replace("'", ""));
        }
      } catch (RuntimeException | Error e) {
        System.out.println("result failed: " + e);
        System.exit(1);
      }
      System.exit(0);
    }
  }

  private static Set<String> mine() {
    Set<String> ids = new HashSet<>();
    DockerEngine.connect()
        .client()
        .listContainersCmd()
        .withShowAll(true)
        .withLabelFilter(Map.of(Labels.OWNER_PID, Long.toString(ProcessHandle.current().pid())))
        .exec()
        .forEach(c -> ids.add(c.getId()));
    return ids;
  }

  @Test
  void spareCopiesMakeForksSkipTheContainerStartAndGoWithTheParent() {
    Set<String> before = mine();
    Sandbox p = Sandbox.create();
    try {
      p.runCode("x = 41");
      p.prepareForks(2);
      Set<String> spares = new HashSet<>();
      Awaitility.await()
          .atMost(Duration.ofSeconds(90))
          .until(
              () -> {
                spares.clear();
                spares.addAll(mine());
                spares.removeAll(before);
                spares.remove(p.id());
                return spares.size() == 2;
              });
      List<Sandbox> copies = p.fork(2);
      try {
        assertThat(copies).extracting(Sandbox::id).containsExactlyInAnyOrderElementsOf(spares);
        for (Sandbox c : copies) {
          assertThat(c.runCode("x + 1").result()).isEqualTo("42");
          assertThat(c.expiresAt())
              .as("a spare's TTL starts when it becomes a copy")
              .isAfter(Instant.now().plus(p.config().ttl()).minusSeconds(60));
        }
        // Two more spares are made for the next fork.
        Awaitility.await()
            .atMost(Duration.ofSeconds(90))
            .until(() -> mine().size() == before.size() + 5);
      } finally {
        copies.forEach(Sandbox::destroy);
      }
    } finally {
      p.destroy();
    }
    Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> before.containsAll(mine()));
  }

  /** On gVisor the copy is a checkpoint of the parent's processes: even a generator survives. */
  @Nested
  @ExtendWith(GvisorRequired.class)
  class OnGvisor {
    @Test
    void copiesCarryLiveProcessMemoryAndStayIndependentBothWays() throws IOException {
      SandboxConfig gvisor =
          SandboxConfig.builder().runtime("gvisor").network(NetworkPolicy.none()).build();
      Set<String> unpackedBefore = containerdUnpacked();
      try (Sandbox p = Sandbox.create(gvisor)) {
        p.exec("echo parent > /workspace/f.txt");
        p.runCode(
            "import threading, time\n"
                + "gen = (i * i for i in range(10))\nnext(gen)\n"
                + "fh = open('/workspace/f.txt')\n"
                + "ticks = []\n"
                + "t = threading.Thread(target=lambda: [ticks.append(1) or time.sleep(0.05)"
                + " for _ in range(100000)], daemon=True)\nt.start()\n");
        List<Sandbox> copies = p.fork(2);
        try {
          for (Sandbox c : copies) {
            ForkReport r = c.forkReport().orElseThrow();
            assertThat(r.mode()).isEqualTo(ForkReport.Mode.CHECKPOINT);
            assertThat(r.parentId()).isEqualTo(p.id());
            assertThat(c.runCode("next(gen), fh.read(), t.is_alive()").result())
                .as("generator, open file and thread are in the copy")
                .isEqualTo("(1, 'parent\\n', True)");
          }
          assertThat(p.runCode("next(gen)").result())
              .as("the parent runs on from its own checkpoint")
              .isEqualTo("1");
          copies.get(0).exec("echo copy > /workspace/f.txt && touch /workspace/only-copy");
          copies.get(0).runCode("only_copy = 1");
          p.runCode("only_parent = 1");
          assertThat(p.exec("cat /workspace/f.txt").stdout()).isEqualTo("parent\n");
          assertThat(p.files().exists("only-copy")).isFalse();
          assertThat(p.runCode("'only_copy' in globals()").result()).isEqualTo("False");
          assertThat(
                  copies
                      .get(1)
                      .runCode("'only_parent' in globals(), 'only_copy' in globals()")
                      .result())
              .isEqualTo("(False, False)");
          assertThat(copies.get(1).exec("cat /workspace/f.txt").stdout()).isEqualTo("parent\n");
          // A restored sandbox forks again (runsc leaves its state behind: see DockerEngine).
          try (Sandbox again = p.fork();
              Sandbox grandchild = copies.get(0).fork()) {
            assertThat(again.runCode("next(gen)").result()).isEqualTo("4");
            assertThat(grandchild.runCode("only_copy, next(gen)").result()).isEqualTo("(1, 4)");
            assertThat(p.runCode("next(gen)").result()).isEqualTo("4");
          }
        } finally {
          copies.forEach(Sandbox::destroy);
        }
      }
      // containerd unpacks each start's image into /tmp and keeps it (containerd#10166): the
      // sandboxes' memory must not stay on the host's disk after five starts from checkpoints.
      assertThat(containerdUnpacked())
          .as("containerd's copies of the checkpoint images are removed")
          .isSubsetOf(unpackedBefore);
    }

    private static Set<String> containerdUnpacked() throws IOException {
      Set<String> out = new HashSet<>();
      try (DirectoryStream<Path> s =
          Files.newDirectoryStream(Path.of("/tmp"), "ctrd-checkpoint*")) {
        s.forEach(p -> out.add(p.getFileName().toString()));
      }
      return out;
    }
  }
}
