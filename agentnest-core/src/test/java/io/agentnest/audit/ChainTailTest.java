package io.agentnest.audit;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ChainTailTest {
  @TempDir Path dir;

  private Path trailOfTwo() {
    try (AuditLog log = AuditLog.open(dir)) {
      log.record(AuditEvent.CONFIG_LOADED, null, Map.of("n", 1));
      log.record(AuditEvent.CONFIG_LOADED, null, Map.of("n", 2));
    }
    return dir.resolve(AuditLog.EVENTS_FILE);
  }

  @Test
  void anEmptyFileEndsAtGenesis() throws IOException {
    Path f = Files.createFile(dir.resolve("empty.jsonl"));
    assertThat(ChainTail.read(f, 0)).isEqualTo(new ChainTail(0, AuditEvent.GENESIS, false));
  }

  @Test
  void theChainEndsAtTheLastWellFormedRecord() throws IOException {
    Path f = trailOfTwo();
    ChainTail t = ChainTail.read(f, Files.size(f));
    assertThat(t.seq()).isEqualTo(2);
    assertThat(t.torn()).isFalse();
    assertThat(AuditJson.isHash(t.hash())).isTrue();
  }

  @Test
  void aTornLastLineIsReportedAndSkipped() throws IOException {
    Path f = trailOfTwo();
    ChainTail whole = ChainTail.read(f, Files.size(f));
    Files.write(f, "{\"seq\":3,\"ty".getBytes(StandardCharsets.UTF_8), StandardOpenOption.APPEND);
    ChainTail t = ChainTail.read(f, Files.size(f));
    assertThat(t.torn()).isTrue();
    assertThat(t.seq()).isEqualTo(2);
    assertThat(t.hash()).isEqualTo(whole.hash());
  }

  @Test
  void aMalformedLastLineFallsBackToTheRecordBeforeIt() throws IOException {
    Path f = trailOfTwo();
    Files.write(f, "not json\n".getBytes(StandardCharsets.UTF_8), StandardOpenOption.APPEND);
    ChainTail t = ChainTail.read(f, Files.size(f));
    assertThat(t.seq()).isEqualTo(2);
    assertThat(t.torn()).isFalse();
  }
}
