package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.internal.support.Json;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class BenchReportTest {
  @Test
  void percentilesAreNearestRankOfTheSortedSamples() {
    BenchReport.Stat s = BenchReport.stat("exec", new double[] {5, 1, 4, 2, 3});
    assertThat(s.n()).isEqualTo(5);
    assertThat(s.p50()).isEqualTo(3);
    assertThat(s.p95()).isEqualTo(5);
    assertThat(s.p99()).isEqualTo(5);
    assertThat(s.min()).isEqualTo(1);
    assertThat(s.max()).isEqualTo(5);
  }

  @Test
  void jsonNamesEachOperationWithItsUnit() throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    BenchReport.print(
        new PrintStream(b, true, StandardCharsets.UTF_8),
        List.of(
            BenchReport.stat("exec", new double[] {1.234}),
            BenchReport.stat("audit append_per_s", new double[] {1000})),
        "kubernetes",
        "img",
        "runsc",
        2,
        true);
    JsonNode root = Json.MAPPER.readTree(b.toString(StandardCharsets.UTF_8));
    assertThat(root.path("runtime").asText()).isEqualTo("runsc");
    assertThat(root.path("backend").asText()).isEqualTo("kubernetes");
    assertThat(root.path("results").get(0).path("p50_ms").asDouble()).isEqualTo(1.23);
    assertThat(root.path("results").get(0).path("unit").asText()).isEqualTo("ms");
    assertThat(root.path("results").get(1).path("unit").asText()).isEqualTo("events/s");
  }

  @Test
  void densityRowsNameTheirUnits() {
    assertThat(BenchReport.unit("density host-rss-after_mib")).isEqualTo("MiB");
    assertThat(BenchReport.unit("density host-heap-per-sandbox_kib")).isEqualTo("KiB");
    assertThat(BenchReport.unit("density host-threads-after_count")).isEqualTo("count");
    assertThat(BenchReport.unit("density neighbour session")).isEqualTo("ms");
  }

  @Test
  void theTableHasAHeaderAndOneRowPerOperation() {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    BenchReport.print(
        new PrintStream(b, true, StandardCharsets.UTF_8),
        List.of(BenchReport.stat("exec", new double[] {1, 2})),
        "docker",
        "img",
        "runc",
        2,
        false);
    List<String> lines = b.toString(StandardCharsets.UTF_8).lines().toList();
    assertThat(lines).hasSize(3);
    assertThat(lines.get(0)).contains("backend docker");
    assertThat(lines.get(1)).startsWith("operation");
    assertThat(lines.get(2)).startsWith("exec").endsWith("ms");
  }
}
