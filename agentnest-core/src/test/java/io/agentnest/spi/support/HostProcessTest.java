package io.agentnest.spi.support;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class HostProcessTest {
  @Test
  void ownerIdIsThisHostThisPidAndItsStartTime() {
    String[] parts = HostProcess.ownerId().split(":");
    assertThat(parts).hasSize(3);
    assertThat(parts[0]).isEqualTo(HostProcess.hostName());
    assertThat(parts[1]).isEqualTo(Long.toString(ProcessHandle.current().pid()));
    assertThat(Long.parseLong(parts[2])).isPositive();
  }

  @Test
  void ownerIdIsTheSameOnEveryCall() {
    assertThat(HostProcess.ownerId()).isEqualTo(HostProcess.ownerId());
  }
}
