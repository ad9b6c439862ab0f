package io.agentnest.microvm.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.AgentNestException;
import java.nio.file.Files;
import java.nio.file.Path;
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
}
