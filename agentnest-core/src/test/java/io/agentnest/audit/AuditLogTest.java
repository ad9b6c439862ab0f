package io.agentnest.audit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class AuditLogTest {
  private static final String SB1 = "3f2a9c1b" + "0".repeat(56);
  private static final String SB2 = "77aa0011" + "1".repeat(56);

  @TempDir Path dir;

  private static Map<String, Object> exec(String command, int exit) {
    return Map.of("command", command, "exit", exit, "duration_ms", 12L);
  }

  private static String line(AuditJson.Sealed s) {
    return new String(s.line(), StandardCharsets.UTF_8).strip();
  }

  private Path events() {
    return dir.resolve(AuditLog.EVENTS_FILE);
  }

  /** Ten records, closed: seq 1..10 on lines 1..10. */
  private List<AuditEvent> tenRecords() {
    List<AuditEvent> out = new ArrayList<>();
    try (AuditLog log = AuditLog.open(dir)) {
      for (int i = 1; i <= 10; i++) {
        out.add(log.record(AuditEvent.EXEC_FINISHED, SB1, exec("echo " + i, 0)));
      }
    }
    return out;
  }

  private List<String> lines() throws IOException {
    return new ArrayList<>(Files.readAllLines(events(), StandardCharsets.UTF_8));
  }

  private void writeLines(List<String> lines) throws IOException {
    Files.writeString(events(), String.join("\n", lines) + "\n", StandardCharsets.UTF_8);
  }

  @Test
  void recordAndQueryRoundTrip() {
    try (AuditLog log = AuditLog.open(dir)) {
      AuditEvent cfg =
          log.record(AuditEvent.CONFIG_LOADED, null, Map.of("path", "/etc/agentnest.yaml"));
      AuditEvent created = log.record(AuditEvent.SANDBOX_CREATED, SB1, Map.of("image", "py"));
      AuditEvent ex = log.record(AuditEvent.EXEC_FINISHED, SB1, exec("pip install numpy", 0));
      AuditEvent net =
          log.record(
              AuditEvent.NETWORK_ATTEMPT,
              SB2,
              Map.of(
                  "host",
                  "pypi.org",
                  "port",
                  443,
                  "decision",
                  "DENIED",
                  "rule",
                  "default-deny",
                  "bytes_up",
                  0,
                  "bytes_down",
                  0));
      AuditEvent nested =
          log.record(
              AuditEvent.POLICY_VIOLATION,
              SB2,
              Map.of("detail", "a \"quoted\"\nline\u0001 ünï", "list", List.of(1, 2.5, true)));

      assertThat(cfg.seq()).isEqualTo(1);
      assertThat(cfg.prevHash()).isEqualTo(AuditEvent.GENESIS);
      assertThat(created.prevHash()).isEqualTo(cfg.hash());
      assertThat(ex.hash()).matches("[0-9a-f]{64}");
      assertThat(ex.actor()).contains(":" + ProcessHandle.current().pid() + ":");
      assertThat(ex.schema()).isEqualTo(1);

      assertThat(log.query(AuditQuery.all()))
          .containsExactly(nested, net, ex, created, cfg); // newest first
      assertThat(log.query(AuditQuery.builder().oldestFirst().limit(2).build()))
          .containsExactly(cfg, created);
      assertThat(log.query(AuditQuery.builder().sandbox("3f2a").build()))
          .containsExactly(ex, created);
      assertThat(log.query(AuditQuery.builder().sandbox(SB2).type("network.attempt").build()))
          .containsExactly(net);
      assertThat(log.query(AuditQuery.builder().type("exec.finished", "config.loaded").build()))
          .containsExactly(ex, cfg);
      assertThat(log.query(AuditQuery.builder().decision("deny").build()))
          .as("network events say DENIED; a query for deny finds them")
          .containsExactly(net);
      assertThat(log.query(AuditQuery.builder().decision("Denied").build())).containsExactly(net);
      assertThat(log.query(AuditQuery.builder().text("NUMPY").build())).containsExactly(ex);
      assertThat(log.query(AuditQuery.builder().text("100%_").build())).isEmpty();
      assertThat(log.query(AuditQuery.builder().text(ex.hash().substring(0, 12)).build()))
          .as("hashes are not searchable text")
          .isEmpty();
      assertThat(log.query(AuditQuery.builder().sandbox("ffff").build())).isEmpty();
      assertThat(log.query(AuditQuery.builder().since(ex.time()).until(net.time()).build()))
          .containsExactly(ex);
      assertThat(log.query(AuditQuery.builder().since(Instant.now().plusSeconds(60)).build()))
          .isEmpty();

      AuditEvent parsed = AuditEvent.fromJson(nested.toJson());
      assertThat(parsed).isEqualTo(nested);
      assertThat(nested.data().get("detail")).isEqualTo("a \"quoted\"\nline\u0001 ünï");
      assertThat(log.verify().ok()).isTrue();
    }
  }

  @Test
  void recordRefusesBadInput() {
    try (AuditLog log = AuditLog.open(dir)) {
      assertThatThrownBy(() -> log.record("exec.whatever", SB1, Map.of()))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("unknown audit event type");
      assertThatThrownBy(() -> log.record(AuditEvent.EXEC_STARTED, null, Map.of()))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> log.record(AuditEvent.EXEC_STARTED, SB1, Map.of("x", new Object())))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> log.record(AuditEvent.EXEC_STARTED, SB1, Map.of("x", Double.NaN)))
          .isInstanceOf(IllegalArgumentException.class);
      assertThat(log.lastSeq()).isZero();
    }
    AuditLog closed = AuditLog.open(dir);
    closed.close();
    assertThatThrownBy(() -> closed.record(AuditEvent.EXEC_STARTED, SB1, Map.of()))
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void chainContinuesAfterReopen() {
    List<AuditEvent> first = tenRecords();
    AuditEvent next;
    try (AuditLog log = AuditLog.open(dir)) {
      assertThat(log.lastSeq()).isEqualTo(10);
      assertThat(log.lastHash()).isEqualTo(first.get(9).hash());
      next = log.record(AuditEvent.SANDBOX_DESTROYED, SB1, Map.of());
      assertThat(log.query(AuditQuery.builder().limit(1000).build())).hasSize(11);
    }
    assertThat(next.seq()).isEqualTo(11);
    assertThat(next.prevHash()).isEqualTo(first.get(9).hash());
    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.ok()).as(r.problem()).isTrue();
    assertThat(r.checked()).isEqualTo(11);
    assertThat(r.lastHash()).isEqualTo(next.hash());
  }

  @Test
  void indexIsRebuiltWhenMissingOrBehind() throws IOException {
    tenRecords();
    Files.delete(dir.resolve(AuditLog.INDEX_FILE));
    Files.deleteIfExists(dir.resolve(AuditLog.INDEX_FILE + "-wal"));
    Files.deleteIfExists(dir.resolve(AuditLog.INDEX_FILE + "-shm"));
    try (AuditLog log = AuditLog.open(dir)) {
      assertThat(log.query(AuditQuery.builder().limit(1000).build())).hasSize(10);
    }
    // a record appended behind the index's back (a process that died before indexing it)
    List<String> lines = lines();
    AuditEvent last = AuditEvent.fromJson(lines.get(9));
    AuditJson.Sealed sealed =
        AuditJson.seal(
            AuditJson.head(11, Instant.now(), "exec.started", SB2, "x", "{}"),
            last.hash(),
            AuditJson.sha256());
    Files.writeString(
        events(), line(sealed) + "\n", StandardCharsets.UTF_8, StandardOpenOption.APPEND);
    try (AuditLog log = AuditLog.open(dir)) {
      assertThat(log.query(AuditQuery.builder().sandbox(SB2).build())).hasSize(1);
      assertThat(log.record(AuditEvent.EXEC_FINISHED, SB2, Map.of()).seq()).isEqualTo(12);
    }
    assertThat(AuditLog.verify(dir).ok()).isTrue();
  }

  @Test
  void indexWithAnotherLayoutIsRebuilt() throws Exception {
    tenRecords();
    try (Connection c =
            DriverManager.getConnection("jdbc:sqlite:" + dir.resolve(AuditLog.INDEX_FILE));
        Statement st = c.createStatement()) {
      st.execute("UPDATE meta SET value = 'old' WHERE key = 'layout'");
      st.execute("UPDATE search SET s = 'nothing'"); // only a rebuild restores it
    }
    try (AuditLog log = AuditLog.open(dir)) {
      assertThat(log.query(AuditQuery.builder().limit(1000).build())).hasSize(10);
      assertThat(log.query(AuditQuery.builder().text("echo 7").build())).hasSize(1);
    }
  }

  @Test
  void verifyAcceptsAnIntactOrEmptyLog() {
    assertThat(AuditLog.verify(dir).ok()).isTrue();
    tenRecords();
    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.ok()).isTrue();
    assertThat(r.checked()).isEqualTo(10);
    assertThat(r.problem()).isEmpty();
  }

  @Test
  void verifyDetectsAnEditedRecord() throws IOException {
    tenRecords();
    List<String> lines = lines();
    lines.set(4, lines.get(4).replace("\"exit\":0", "\"exit\":1"));
    writeLines(lines);
    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.ok()).isFalse();
    assertThat(r.line()).isEqualTo(5);
    assertThat(r.seq()).isEqualTo(5);
    assertThat(r.checked()).isEqualTo(4);
    assertThat(r.problem()).contains("line 5").contains("edited");
  }

  @Test
  void verifyDetectsAnEditedRecordWhoseHashWasRecomputed() throws IOException {
    List<AuditEvent> recs = tenRecords();
    List<String> lines = lines();
    AuditEvent e = recs.get(4);
    AuditJson.Sealed forged =
        AuditJson.seal(
            AuditJson.head(e.seq(), e.time(), e.type(), e.sandboxId(), e.actor(), "{\"exit\":0}"),
            e.prevHash(),
            AuditJson.sha256());
    lines.set(4, line(forged));
    writeLines(lines);
    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.ok()).isFalse();
    assertThat(r.line()).isEqualTo(6);
    assertThat(r.problem()).contains("chain broken");
  }

  @Test
  void verifyDetectsADeletedRecord() throws IOException {
    tenRecords();
    List<String> lines = lines();
    lines.remove(4);
    writeLines(lines);
    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.ok()).isFalse();
    assertThat(r.line()).isEqualTo(5);
    assertThat(r.seq()).isEqualTo(6);
    assertThat(r.problem()).contains("deleted").contains("seq 5 missing");
  }

  @Test
  void verifyDetectsDeletedFirstRecords() throws IOException {
    tenRecords();
    List<String> lines = lines();
    lines.subList(0, 2).clear();
    writeLines(lines);
    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.line()).isEqualTo(1);
    assertThat(r.problem()).contains("seq 1..2 missing");
  }

  @Test
  void verifyDetectsAnInsertedDuplicate() throws IOException {
    tenRecords();
    List<String> lines = lines();
    lines.add(3, lines.get(2));
    writeLines(lines);
    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.ok()).isFalse();
    assertThat(r.line()).isEqualTo(4);
    assertThat(r.seq()).isEqualTo(3);
    assertThat(r.problem()).contains("inserted");
  }

  @Test
  void verifyDetectsAForgedInsertedRecord() throws IOException {
    List<AuditEvent> recs = tenRecords();
    List<String> lines = lines();
    AuditEvent third = recs.get(2);
    AuditJson.Sealed forged =
        AuditJson.seal(
            AuditJson.head(4, third.time(), "exec.finished", SB1, third.actor(), "{\"exit\":0}"),
            third.hash(),
            AuditJson.sha256());
    lines.add(3, line(forged));
    writeLines(lines);
    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.ok()).isFalse();
    assertThat(r.line()).as(r.problem()).isEqualTo(4);
    assertThat(r.problem()).contains("line 4").contains("inserted");
  }

  @Test
  void verifyDetectsReorderedRecords() throws IOException {
    tenRecords();
    List<String> lines = lines();
    Collections.swap(lines, 4, 5);
    writeLines(lines);
    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.ok()).isFalse();
    assertThat(r.line()).isEqualTo(5);
    assertThat(r.seq()).isEqualTo(6);
    assertThat(r.problem()).contains("reordered").contains("line 6");
  }

  @Test
  void verifyDetectsATruncatedLastLine() throws IOException {
    tenRecords();
    long size = Files.size(events());
    try (RandomAccessFile f = new RandomAccessFile(events().toFile(), "rw")) {
      f.setLength(size - 40);
    }
    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.ok()).isFalse();
    assertThat(r.line()).isEqualTo(10);
    assertThat(r.seq()).isEqualTo(10);
    assertThat(r.checked()).isEqualTo(9);
    assertThat(r.problem()).contains("truncated");
  }

  @Test
  void reopeningATornLogKeepsTheEvidenceAndContinuesFromTheLastGoodRecord() throws IOException {
    List<AuditEvent> recs = tenRecords();
    long size = Files.size(events());
    try (RandomAccessFile f = new RandomAccessFile(events().toFile(), "rw")) {
      f.setLength(size - 40);
    }
    try (AuditLog log = AuditLog.open(dir)) {
      AuditEvent e = log.record(AuditEvent.EXEC_STARTED, SB1, Map.of());
      assertThat(e.seq()).isEqualTo(10);
      assertThat(e.prevHash()).isEqualTo(recs.get(8).hash());
    }
    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.ok()).isFalse();
    assertThat(r.line()).isEqualTo(10);
    assertThat(r.problem()).contains("not a valid record");
  }

  @Test
  void concurrentWritersProduceOneUnbrokenChain() throws Exception {
    int threads = 8;
    int each = 5_000;
    Set<Long> seqs = Collections.synchronizedSet(new HashSet<>());
    try (AuditLog log = AuditLog.open(dir)) {
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int id = t;
        fs.add(
            pool.submit(
                () -> {
                  for (int i = 0; i < each; i++) {
                    seqs.add(log.record(AuditEvent.FILE_WRITE, SB1, Map.of("t", id, "i", i)).seq());
                  }
                }));
      }
      for (Future<?> f : fs) {
        f.get();
      }
      pool.shutdown();
      assertThat(log.query(AuditQuery.builder().limit(1).build()).get(0).seq())
          .isEqualTo(threads * each);
    }
    assertThat(seqs).hasSize(threads * each);
    assertThat(Collections.max(seqs)).isEqualTo(threads * each);
    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.ok()).as(r.problem()).isTrue();
    assertThat(r.checked()).isEqualTo(threads * each);
  }

  @Test
  void twoLogsOnOneDirectoryShareTheChain() throws Exception {
    // as two processes would: each one re-reads the tail when the other appended
    try (AuditLog a = AuditLog.open(dir);
        AuditLog b = AuditLog.open(dir)) {
      ExecutorService pool = Executors.newFixedThreadPool(2);
      Future<?> fa =
          pool.submit(
              () -> {
                for (int i = 0; i < 2000; i++) {
                  a.record(AuditEvent.EXEC_STARTED, SB1, Map.of("i", i));
                }
              });
      Future<?> fb =
          pool.submit(
              () -> {
                for (int i = 0; i < 2000; i++) {
                  b.record(AuditEvent.EXEC_STARTED, SB2, Map.of("i", i));
                }
              });
      fa.get();
      fb.get();
      pool.shutdown();
      b.flush(); // a waits for its own records only; b's are indexed by b's writer
      assertThat(a.query(AuditQuery.builder().sandbox(SB2).limit(5000).build())).hasSize(2000);
    }
    VerifyReport r = AuditLog.verify(dir);
    assertThat(r.ok()).as(r.problem()).isTrue();
    assertThat(r.checked()).isEqualTo(4000);
    try (AuditLog log = AuditLog.open(dir)) {
      assertThat(log.query(AuditQuery.builder().limit(10_000).build())).hasSize(4000);
    }
  }

  @Test
  void sinksReceiveEveryRecordInOrder() throws IOException {
    List<AuditEvent> got = new CopyOnWriteArrayList<>();
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    Path file = dir.resolve("ship/audit.jsonl");
    AtomicBoolean closed = new AtomicBoolean();
    List<AuditEvent> written = new ArrayList<>();
    try (AuditLog log = AuditLog.open(dir)) {
      log.addSink(
          new AuditSink() {
            @Override
            public void accept(AuditEvent e) {
              got.add(e);
            }

            @Override
            public void close() {
              closed.set(true);
            }
          });
      log.addSink(AuditSinks.jsonLines(bytes));
      log.addSink(AuditSinks.jsonLines(file));
      log.addSink(AuditSinks.slf4j());
      log.addSink(
          e -> {
            throw new IllegalStateException("a broken sink does not stop the others");
          });
      for (int i = 0; i < 200; i++) {
        written.add(log.record(AuditEvent.SECRET_REDACTED, SB1, Map.of("rule", "r", "count", i)));
      }
      log.flush();
      assertThat(got).containsExactlyElementsOf(written);
    }
    assertThat(closed).isTrue();
    String[] out = bytes.toString(StandardCharsets.UTF_8).split("\n");
    assertThat(out).hasSize(200);
    for (int i = 0; i < out.length; i++) {
      assertThat(AuditEvent.fromJson(out[i])).isEqualTo(written.get(i));
      assertThat(AuditJson.MAPPER.readTree(out[i]).get("data").get("count").asInt()).isEqualTo(i);
    }
    assertThat(Files.readAllLines(file)).hasSize(200).first().isEqualTo(written.get(0).toJson());
    assertThat(lines()).isEqualTo(Files.readAllLines(file));
  }

  @Test
  void tailFollowsNewRecordsMatchingTheFilter() throws Exception {
    try (AuditLog log = AuditLog.open(dir)) {
      AuditEvent before = log.record(AuditEvent.EXEC_FINISHED, SB1, exec("old", 0));
      List<AuditEvent> seen = new CopyOnWriteArrayList<>();
      List<AuditEvent> seenAfter = new CopyOnWriteArrayList<>();
      AtomicBoolean go = new AtomicBoolean(true);
      AuditQuery filter = AuditQuery.builder().type(AuditEvent.EXEC_FINISHED).build();
      Thread t = new Thread(() -> log.tail(filter, seen::add, go::get));
      Thread t2 = new Thread(() -> log.tail(AuditQuery.all(), 0, seenAfter::add, go::get));
      t.start();
      t2.start();
      Thread.sleep(300);
      AuditEvent a = log.record(AuditEvent.EXEC_FINISHED, SB1, exec("new", 0));
      log.record(AuditEvent.EXEC_STARTED, SB1, Map.of());
      AuditEvent b = log.record(AuditEvent.EXEC_FINISHED, SB2, exec("new2", 1));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
      while ((seen.size() < 2 || seenAfter.size() < 4) && System.nanoTime() < deadline) {
        Thread.sleep(50);
      }
      go.set(false);
      t.join(2000);
      t2.join(2000);
      assertThat(seen).containsExactly(a, b);
      assertThat(seenAfter).hasSize(4).first().isEqualTo(before);
    }
  }

  @Test
  void jsonLineIsCanonicalAndHashCoversEverythingButTheHash() {
    try (AuditLog log = AuditLog.open(dir)) {
      AuditEvent e =
          log.record(
              AuditEvent.FILE_WRITE, SB1, Map.of("size", 10, "path", "a/b.txt", "z", Map.of()));
      String line = e.toJson();
      assertThat(line)
          .startsWith("{\"seq\":1,\"time\":\"")
          .contains("\"data\":{\"path\":\"a/b.txt\",\"size\":10,\"z\":{}}")
          .endsWith(",\"prevHash\":\"" + AuditEvent.GENESIS + "\",\"hash\":\"" + e.hash() + "\"}");
      String body = line.substring(0, line.indexOf(",\"hash\":")) + "}";
      assertThat(AuditJson.hex(AuditJson.sha256().digest(body.getBytes(StandardCharsets.UTF_8))))
          .isEqualTo(e.hash());
    }
  }
}
