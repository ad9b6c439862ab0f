package io.agentnest.spi;

import java.io.IOException;
import java.util.Map;

/**
 * A benchmark that a module ships for {@code agentnest bench}, found with {@link
 * java.util.ServiceLoader} under {@code META-INF/services/io.agentnest.spi.Benchmark}, so that the
 * CLI runs internal measurements without depending on internal classes. Benchmarks print nothing
 * and assert nothing: they return samples and the caller reports p50/p95.
 */
public interface Benchmark {
  /** The name {@code agentnest bench --only} selects it by, e.g. {@code egress}. */
  String name();

  /**
   * Runs the benchmark scaled by {@code iterations} (each implementation bounds its own work) and
   * returns its samples by operation: latencies in milliseconds, or one figure (a rate, a size) as
   * a single-element array. An operation is reported as "name operation"; the empty operation as
   * the benchmark's name alone.
   */
  Map<String, double[]> run(int iterations) throws IOException;
}
