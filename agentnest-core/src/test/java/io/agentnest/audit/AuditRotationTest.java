package io.agentnest.audit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ConfigException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Size-based rotation: one chain across files, verified across them, and the free-disk guard. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AuditRotationTest {
  private static final String SB = "5b0c" + "0".repeat(60);
  private static final AuditLog.Options SMALL = new AuditLog.Options(64 << 10, 0);

  @TempDir Path dir;

  private static List<AuditEvent> write(AuditLog log, int n) {
    List<AuditEvent> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(log.record(AuditEvent.EXEC_STARTED, SB, Map.of("command", "echo " + i, "i", i)));
    }
    return out;
  }

  private List<Path> rotated() throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.getFileName().toString().matches("events-[0-9]{6}\\.jsonl"))
          .sorted()
          .toList();
    }
  }

  private Path file(int n) {
    return dir.resolve(AuditSegments.rotatedName(n));
  }

  @Test
  void eventsRotateAtTheSizeLimitAndTheChainRunsOnAcrossTheFiles() throws IOException {
    List<AuditEvent> written;
    String last;
    try (AuditLog log = AuditLog.open(dir, SMALL)) {
      written = write(log, 2000);
      last = log.lastHash();
      assertThat(log.query(AuditQuery.builder().limit(5000).build())).hasSize(2000);
    }
    List<Path> files = rotated();
    assertThat(files.size()).isGreaterThan(5);
    for (int i = 0; i < files.size(); i++) {
      assertThat(files.get(i).getFileName()).hasToString(AuditSegments.rotatedName(i + 1));
      // A file is rotated on the record that reaches the limit: never more than one record over.
      assertThat(Files.size(files.get(i))).isBetween(64L << 10, (64L << 10) + 1024);
    }
    // Each file's first record links to the previous file's last.
    List<String> first = Files.readAllLines(file(2), StandardCharsets.UTF_8);
    List<String> before = Files.readAllLines(file(1), StandardCharsets.UTF_8);
    assertThat(AuditEvent.fromJson(first.get(0)).prevHash())
        .isEqualTo(AuditEvent.fromJson(before.get(before.size() - 1)).hash());

    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.ok()).as(r.problem()).isTrue();
    assertThat(r.checked()).isEqualTo(2000);
    assertThat(r.lastHash()).isEqualTo(last);

    // Reopened (index gone, as after a crash): the chain and the index go on across files.
    Files.delete(dir.resolve(AuditLog.INDEX_FILE));
    try (AuditLog log = AuditLog.open(dir, SMALL)) {
      assertThat(log.query(AuditQuery.builder().limit(5000).oldestFirst().build()))
          .containsExactlyElementsOf(written);
      AuditEvent next = log.record(AuditEvent.EXEC_STARTED, SB, Map.of("i", "after"));
      assertThat(next.seq()).isEqualTo(2001);
      assertThat(next.prevHash()).isEqualTo(last);
    }
    assertThat(AuditLog.verify(dir).checked()).isEqualTo(2001);
  }

  @Test
  void aLogOpenedRightAfterARotationContinuesFromTheLastRotatedFile() throws IOException {
    String last;
    try (AuditLog log = AuditLog.open(dir, SMALL)) {
      // Write until a rotation has just happened: the active file is empty.
      for (int i = 0;
          i < 10_000 && (rotated().isEmpty() || Files.size(dir.resolve(AuditLog.EVENTS_FILE)) > 0);
          i++) {
        log.record(AuditEvent.EXEC_STARTED, SB, Map.of("i", i));
      }
      assertThat(Files.size(dir.resolve(AuditLog.EVENTS_FILE))).isZero();
      last = log.lastHash();
    }
    try (AuditLog log = AuditLog.open(dir, SMALL)) {
      assertThat(log.lastHash()).isEqualTo(last);
      assertThat(log.record(AuditEvent.EXEC_STARTED, SB, Map.of()).prevHash()).isEqualTo(last);
    }
    assertThat(AuditLog.verify(dir).ok()).isTrue();
  }

  @Test
  void verifyDetectsARemovedMiddleFile() throws IOException {
    try (AuditLog log = AuditLog.open(dir, SMALL)) {
      write(log, 1000);
    }
    Files.delete(file(2));
    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.ok()).isFalse();
    assertThat(r.problem())
        .isEqualTo(
            "file events-000002.jsonl is missing between events-000001.jsonl and"
                + " events-000003.jsonl: a rotated file was removed");
  }

  @Test
  void verifyDetectsAMiddleFileRemovedAndTheRestRenumbered() throws IOException {
    try (AuditLog log = AuditLog.open(dir, SMALL)) {
      write(log, 1000);
    }
    int n = rotated().size();
    Files.delete(file(2));
    for (int i = 3; i <= n; i++) {
      Files.move(file(i), file(i - 1));
    }
    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.ok()).isFalse();
    assertThat(r.problem())
        .startsWith("events-000002.jsonl line 1 (seq ")
        .contains("deleted: seq ")
        .contains("missing before this line");
  }

  @Test
  void verifyDetectsReorderedFiles() throws IOException {
    try (AuditLog log = AuditLog.open(dir, SMALL)) {
      write(log, 1000);
    }
    Path tmp = dir.resolve("swap");
    Files.move(file(2), tmp);
    Files.move(file(3), file(2));
    Files.move(tmp, file(3));
    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.ok()).isFalse();
    assertThat(r.problem())
        .startsWith("events-000002.jsonl line 1 (seq ")
        .contains("records reordered: expected seq ")
        .contains("comes later at events-000003.jsonl line 1");
  }

  @Test
  void verifyDetectsARemovedFirstFileAndAnEmptiedOne() throws IOException {
    try (AuditLog log = AuditLog.open(dir, SMALL)) {
      write(log, 1000);
    }
    Files.writeString(file(3), "");
    assertThat(AuditLog.verify(dir).problem())
        .isEqualTo(
            "file events-000003.jsonl is empty: a rotated file always holds records, so they"
                + " were removed");
    Files.delete(file(1));
    assertThat(AuditLog.verify(dir).problem())
        .startsWith("file events-000001.jsonl is missing: the trail starts at events-000002.jsonl");
  }

  @Test
  void verifyNamesTheFileOfAnEditedRecord() throws IOException {
    try (AuditLog log = AuditLog.open(dir, SMALL)) {
      write(log, 1000);
    }
    List<String> lines = new ArrayList<>(Files.readAllLines(file(2), StandardCharsets.UTF_8));
    long seq = AuditEvent.fromJson(lines.get(4)).seq();
    lines.set(4, lines.get(4).replace("\"echo ", "\"ECHO "));
    Files.writeString(file(2), String.join("\n", lines) + "\n", StandardCharsets.UTF_8);
    assertThat(AuditLog.verify(dir).problem())
        .isEqualTo(
            "events-000002.jsonl line 5 (seq "
                + seq
                + "): record edited: its hash does not match its content");
  }

  @Test
  void tailFollowsAcrossRotationsWithoutLossOrRepeat() throws Exception {
    try (AuditLog log = AuditLog.open(dir, SMALL)) {
      List<AuditEvent> early = write(log, 300);
      List<AuditEvent> fromEnd = new CopyOnWriteArrayList<>();
      List<AuditEvent> fromStart = new CopyOnWriteArrayList<>();
      List<AuditEvent> fromMiddle = new CopyOnWriteArrayList<>();
      AtomicBoolean go = new AtomicBoolean(true);
      Thread a = new Thread(() -> log.tail(AuditQuery.all(), fromEnd::add, go::get));
      Thread b = new Thread(() -> log.tail(AuditQuery.all(), 0, fromStart::add, go::get));
      Thread c = new Thread(() -> log.tail(AuditQuery.all(), 100, fromMiddle::add, go::get));
      a.start();
      b.start();
      c.start();
      Thread.sleep(300); // the tail from the end starts after what is written so far
      List<AuditEvent> late = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        late.addAll(write(log, 100));
        Thread.sleep(5);
      }
      List<AuditEvent> all = new ArrayList<>(early);
      all.addAll(late);
      for (int i = 0;
          i < 400
              && (fromStart.size() < all.size()
                  || fromEnd.size() < late.size()
                  || fromMiddle.size() < all.size() - 100);
          i++) {
        Thread.sleep(50);
      }
      go.set(false);
      a.join(5_000);
      b.join(5_000);
      c.join(5_000);
      assertThat(rotated().size()).isGreaterThan(3);
      assertThat(seqs(fromEnd)).isEqualTo(seqs(late));
      assertThat(seqs(fromStart)).isEqualTo(seqs(all));
      assertThat(seqs(fromMiddle)).isEqualTo(seqs(all.subList(100, all.size())));
      assertThat(fromEnd).containsExactlyElementsOf(late);
      assertThat(fromStart).containsExactlyElementsOf(all);
      assertThat(fromMiddle).containsExactlyElementsOf(all.subList(100, all.size()));
    }
  }

  private static String seqs(List<AuditEvent> events) {
    StringBuilder sb = new StringBuilder();
    long start = -1;
    long prev = -1;
    for (AuditEvent e : events) {
      if (e.seq() != prev + 1) {
        if (start >= 0) {
          sb.append(start).append("..").append(prev).append(' ');
        }
        start = e.seq();
      }
      prev = e.seq();
    }
    return sb.append(start).append("..").append(prev).toString();
  }

  @Test
  void twoLogsOnOneDirectoryRotateOneChain() throws Exception {
    try (AuditLog a = AuditLog.open(dir, SMALL);
        AuditLog b = AuditLog.open(dir, SMALL)) {
      ExecutorService pool = Executors.newFixedThreadPool(2);
      try {
        Future<?> fa = pool.submit(() -> write(a, 1500));
        Future<?> fb = pool.submit(() -> write(b, 1500));
        fa.get();
        fb.get();
      } finally {
        pool.shutdown();
      }
      a.flush();
      b.flush();
    }
    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.ok()).as(r.problem()).isTrue();
    assertThat(r.checked()).isEqualTo(3000);
    try (AuditLog log = AuditLog.open(dir, SMALL)) {
      assertThat(log.query(AuditQuery.builder().limit(10_000).build())).hasSize(3000);
    }
  }

  @Test
  void aRecordThatWouldTouchTheDiskReserveIsRefusedWithAClearError() {
    AtomicLong free = new AtomicLong(10L << 30);
    AuditLog.Options reserve = new AuditLog.Options(64 << 10, 512L << 20);
    try (AuditLog log = AuditLog.open(dir, reserve, p -> free.get())) {
      write(log, 10);
      log.requireRoom();
      free.set(100L << 20);
      assertThatThrownBy(() -> log.record(AuditEvent.EXEC_STARTED, SB, Map.of()))
          .isInstanceOf(UncheckedIOException.class)
          .hasMessageContaining("audit records in " + dir.toAbsolutePath() + " are refused")
          .hasMessageContaining("only 100.0 MiB free")
          .hasMessageContaining("below the reserve of 512.0 MiB")
          .hasMessageContaining("AGENTNEST_AUDIT_MIN_FREE_DISK");
      assertThatThrownBy(log::requireRoom)
          .isInstanceOf(UncheckedIOException.class)
          .hasMessageContaining("below the reserve");
      // Space freed: records go on, and nothing of the refused ones is in the chain.
      free.set(10L << 30);
      AuditEvent e = log.record(AuditEvent.EXEC_STARTED, SB, Map.of());
      assertThat(e.seq()).isEqualTo(11);
    }
    assertThat(AuditLog.verify(dir).ok()).isTrue();
  }

  @Test
  void optionsAreValidatedAndReadFromTheEnvironment() {
    assertThat(
            AuditLog.Options.fromEnvironment(
                Map.of(AuditLog.ENV_MAX_FILE_SIZE, "16m", AuditLog.ENV_MIN_FREE_DISK, "1g")))
        .isEqualTo(new AuditLog.Options(16L << 20, 1L << 30));
    assertThat(AuditLog.Options.fromEnvironment(Map.of())).isEqualTo(AuditLog.Options.defaults());
    assertThatThrownBy(
            () -> AuditLog.Options.fromEnvironment(Map.of(AuditLog.ENV_MAX_FILE_SIZE, "lots")))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("AGENTNEST_AUDIT_MAX_FILE_SIZE 'lots' is not a size");
    assertThatThrownBy(() -> new AuditLog.Options(1000, 0))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("from 64k to 64g");
  }

  /**
   * Whatever the sizes, the files hold one chain, and removing any one rotated file is caught: by
   * verify, or, when nothing came after it (the same as cutting the trail's end), by the last hash
   * exported before (see docs/audit.md, "What the chain does not do").
   */
  @Property(tries = 30)
  void removingAnyRotatedFileIsDetected(
      @ForAll @IntRange(min = 200, max = 800) int records,
      @ForAll @IntRange(min = 64, max = 96) int kib,
      @ForAll @IntRange(min = 0, max = 100) int pick)
      throws IOException {
    Path d = Files.createTempDirectory("agentnest-rotation-");
    try {
      try (AuditLog log = AuditLog.open(d, new AuditLog.Options((long) kib << 10, 0))) {
        for (int i = 0; i < records; i++) {
          log.record(AuditEvent.EXEC_STARTED, SB, Map.of("pad", "x".repeat(i % 300)));
        }
      }
      VerifyReport intact = AuditLog.verify(d);
      assertThat(intact.ok()).isTrue();
      List<Path> files;
      try (Stream<Path> s = Files.list(d)) {
        files =
            s.filter(p -> p.getFileName().toString().matches("events-[0-9]{6}\\.jsonl"))
                .sorted()
                .toList();
      }
      if (files.isEmpty()) {
        return;
      }
      Path victim = files.get(pick % files.size());
      Path aside = d.resolve("aside");
      Files.move(victim, aside, StandardCopyOption.ATOMIC_MOVE);
      VerifyReport after = AuditLog.verify(d);
      assertThat(!after.ok() || !after.lastHash().equals(intact.lastHash()))
          .as("without %s: %s", victim.getFileName(), after)
          .isTrue();
      if (Files.size(d.resolve(AuditLog.EVENTS_FILE)) > 0
          || victim != files.get(files.size() - 1)) {
        assertThat(after.ok()).as("without %s", victim.getFileName()).isFalse();
      }
    } finally {
      try (Stream<Path> s = Files.walk(d)) {
        for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }
}
