package io.agentnest.microvm.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.AgentNestException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class GuestCheckpointsTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @TempDir Path dir;

  private static GuestCheckpoints.Meta meta(String kernelArgs, long memoryMiB) {
    return new GuestCheckpoints.Meta(
        GuestCheckpoints.FORMAT,
        "agentnest/python:latest",
        "sha256:00",
        "tcg",
        memoryMiB,
        1,
        kernelArgs,
        true,
        256L << 20,
        1000);
  }

  private void write(GuestCheckpoints.Meta m) throws Exception {
    Files.write(dir.resolve(GuestCheckpoints.META), JSON.writeValueAsBytes(m));
  }

  @Test
  void whatACheckpointWroteReadsBack() throws Exception {
    GuestCheckpoints.Meta m = meta("console=ttyS0 quiet tsc_early_khz=2100000", 608);
    write(m);
    assertThat(GuestCheckpoints.readMeta(dir)).isEqualTo(m);
  }

  @Test
  void aDirectoryWithoutTheDescriptionIsNotAMicrovmCheckpoint() throws Exception {
    Files.writeString(dir.resolve("checkpoint.img"), "a gVisor image");
    assertThatThrownBy(() -> GuestCheckpoints.readMeta(dir))
        .isInstanceOf(AgentNestException.class)
        .hasMessageContaining("not a microVM checkpoint");
  }

  @Test
  void kernelArgumentsThatCouldCarryAnythingElseAreRefused() throws Exception {
    write(meta("console=ttyS0\" -device evil", 608));
    assertThatThrownBy(() -> GuestCheckpoints.readMeta(dir))
        .hasMessageContaining("not one this version writes");
  }

  @Test
  void anImplausibleMachineIsRefused() throws Exception {
    write(meta("console=ttyS0", 1));
    assertThatThrownBy(() -> GuestCheckpoints.readMeta(dir))
        .hasMessageContaining("not one this version writes");
  }

  @Test
  void anOversizedDescriptionIsRefusedUnread() throws Exception {
    Files.write(dir.resolve(GuestCheckpoints.META), new byte[100_000]);
    assertThatThrownBy(() -> GuestCheckpoints.readMeta(dir)).hasMessageContaining("too long");
  }

  @Test
  void theResumedLineCarriesTheHostsTimeAndASeed() throws Exception {
    String line =
        GuestCheckpoints.resumedLine(Instant.ofEpochSecond(1_700_000_000L, 5), "ab".repeat(32));
    assertThat(JSON.readTree(line).path("op").asText()).isEqualTo("resumed");
    assertThat(JSON.readTree(line).path("time_ns").asLong()).isEqualTo(1_700_000_000_000_000_005L);
    assertThat(JSON.readTree(line).path("seed").asText()).hasSize(64);
    assertThat(line).doesNotContain("\n");
  }

  @Test
  void onlyAnImageWhoseInitAnswersGetsTheControlLine() throws Exception {
    Path image = Files.createDirectories(dir.resolve("image"));
    GuestImage g = new GuestImage("agentnest/python:latest", image);
    Files.writeString(image.resolve(GuestImage.META), "{\"image\": \"agentnest/python:latest\"}");
    assertThat(g.hasControlPort()).isFalse();
    Files.writeString(image.resolve(GuestImage.META), "{\"vminit\": 2}");
    assertThat(g.hasControlPort()).isTrue();
  }
}
