package io.agentnest.internal.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.spi.Benchmark;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

class ShippedBenchmarksTest {
  @Test
  void theCliFindsEveryInternalBenchmarkThroughTheSpi() {
    assertThat(ServiceLoader.load(Benchmark.class).stream().map(p -> p.get().name()))
        .containsExactlyInAnyOrder("audit", "egress", "redaction", "egress-intercept");
  }
}
