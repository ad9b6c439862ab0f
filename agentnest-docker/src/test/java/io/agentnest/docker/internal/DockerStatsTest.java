package io.agentnest.docker.internal;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.github.dockerjava.api.model.Statistics;
import io.agentnest.ResourceUsage;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The figures {@code docker stats} shows, from the engine's JSON as docker-java reads it. */
class DockerStatsTest {
  static final ObjectMapper JSON =
      new ObjectMapper().disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);

  static Statistics stats(String json) throws Exception {
    return JSON.readValue(json, Statistics.class);
  }

  @Test
  void cpusAreTheContainersShareOfTheSystemsTimeTimesTheCpusAndCacheIsNotMemoryInUse()
      throws Exception {
    // cgroup v1: 0.5 s of CPU while the system counter (2 CPUs) advanced 2 s: a quarter of the
    // machine's time, half of one CPU.
    Statistics s =
        stats(
            "{\"read\":\"2026-12-04T21:00:01Z\","
                + "\"cpu_stats\":{\"cpu_usage\":{\"total_usage\":1500000000},"
                + "\"system_cpu_usage\":12000000000,\"online_cpus\":2},"
                + "\"precpu_stats\":{\"cpu_usage\":{\"total_usage\":1000000000},"
                + "\"system_cpu_usage\":10000000000},"
                + "\"memory_stats\":{\"usage\":50000000,\"limit\":268435456,"
                + "\"stats\":{\"total_inactive_file\":8000000,\"cache\":9000000}}}");
    ResourceUsage u = DockerStats.of(s).orElseThrow();
    assertThat(u.cpus()).isEqualTo(0.5);
    assertThat(u.memoryBytes()).isEqualTo(42_000_000);
    assertThat(u.memoryLimitBytes()).isEqualTo(268435456);
    assertThat(u.measuredAt()).isEqualTo(Instant.parse("2026-12-04T21:00:01Z"));
  }

  @Test
  void aFirstSampleWithoutAPreviousOneIsZeroCpusAndNoMemoryIsNoFigure() throws Exception {
    Statistics first =
        stats(
            "{\"cpu_stats\":{\"cpu_usage\":{\"total_usage\":5},\"system_cpu_usage\":7},"
                + "\"precpu_stats\":{},\"memory_stats\":{\"usage\":1000,"
                + "\"stats\":{\"inactive_file\":4000}}}");
    ResourceUsage u = DockerStats.of(first).orElseThrow();
    assertThat(u.cpus()).isZero();
    // More cache than usage (the kernel counts them at different moments): never negative.
    assertThat(u.memoryBytes()).isZero();
    assertThat(DockerStats.of(stats("{\"memory_stats\":{}}"))).isEmpty();
  }
}
