package io.agentnest.internal.bench;

import io.agentnest.internal.egress.EgressBenchmark;
import io.agentnest.spi.Benchmark;
import java.io.IOException;
import java.util.Map;

/** {@code agentnest bench --only egress}: the egress proxy on loopback, 100 MiB downloads. */
public final class EgressBench implements Benchmark {
  private static final long BODY_BYTES = 100L << 20;

  @Override
  public String name() {
    return "egress";
  }

  @Override
  public Map<String, double[]> run(int iterations) throws IOException {
    return EgressBenchmark.run(Math.max(5, iterations / 5), BODY_BYTES);
  }
}
