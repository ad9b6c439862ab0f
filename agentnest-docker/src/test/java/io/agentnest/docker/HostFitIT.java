package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ConfigException;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Limits the host cannot give are refused before Docker sees them, with the host's size and the
 * fix: Docker itself answers more CPUs than the host has with a bare {@code Status 400}, and more
 * memory than the host has with nothing at all.
 */
@ExtendWith(DockerEngineRequired.class)
class HostFitIT {
  @Test
  void moreCpusThanTheHostHasIsRefusedNamingTheHostsCount() {
    int cpus = Runtime.getRuntime().availableProcessors();
    assertThatThrownBy(() -> Sandbox.create(SandboxConfig.builder().cpus(cpus * 32).build()))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("is more than the Docker host has")
        .hasMessageContaining("CPUs): give at most --cpus");
  }

  @Test
  void moreMemoryThanTheHostHasIsRefusedNamingTheHostsSize() {
    assertThatThrownBy(() -> Sandbox.create(SandboxConfig.builder().memory("10000g").build()))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("memory 10000g is more than the Docker host has")
        .hasMessageContaining("give at most --memory");
  }
}
