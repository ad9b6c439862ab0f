package io.agentnest.internal.bench;

import io.agentnest.internal.egress.InterceptBenchmark;
import io.agentnest.spi.Benchmark;
import java.io.IOException;
import java.util.Map;

/**
 * {@code agentnest bench --only egress-intercept}: HTTPS GET through an opaque tunnel against an
 * intercepted one (credential injection), and intercepted download throughput (100 MiB).
 */
public final class EgressInterceptBench implements Benchmark {
  private static final long BODY_BYTES = 100L << 20;

  @Override
  public String name() {
    return "egress-intercept";
  }

  @Override
  public Map<String, double[]> run(int iterations) throws IOException {
    return InterceptBenchmark.run(
        Math.max(20, iterations), Math.max(5, iterations / 5), BODY_BYTES);
  }
}
