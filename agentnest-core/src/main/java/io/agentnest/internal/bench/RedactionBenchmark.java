package io.agentnest.internal.bench;

import io.agentnest.internal.redact.RedactingStream;
import io.agentnest.internal.redact.Redactor;
import io.agentnest.spi.Benchmark;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;

/**
 * {@code agentnest bench --only redaction}: redaction throughput with 100 secrets and the default
 * credential patterns, in MB/s, over 32 MiB of log-like text.
 */
public final class RedactionBenchmark implements Benchmark {
  @Override
  public String name() {
    return "redaction";
  }

  /**
   * {@code iterations / 10} passes (at least 3), one sample each; reported under the name alone.
   */
  @Override
  public Map<String, double[]> run(int iterations) {
    return Map.of("", passes(Math.max(3, iterations / 10)));
  }

  private static double[] passes(int iterations) {
    Random rnd = new Random(7);
    Map<String, String> secrets = new LinkedHashMap<>();
    for (int i = 0; i < 100; i++) {
      secrets.put(
          "SECRET_" + i,
          "sk-" + Long.toHexString(rnd.nextLong()) + Long.toHexString(rnd.nextLong()));
    }
    Redactor r = Redactor.of(secrets);
    // Log-like text with occasional secrets and tokens, 32 MiB.
    StringBuilder sb = new StringBuilder();
    String[] words = {
      "INFO",
      "request",
      "user=alice",
      "took",
      "12ms",
      "GET",
      "/api/v1/items",
      "ok",
      "id=4f2a9",
      "200"
    };
    while (sb.length() < 32 << 20) {
      for (int i = 0; i < 12; i++) {
        sb.append(words[rnd.nextInt(words.length)]).append(' ');
      }
      if (rnd.nextInt(50) == 0) {
        sb.append(secrets.get("SECRET_" + rnd.nextInt(100)));
      }
      if (rnd.nextInt(200) == 0) {
        sb.append(
            " https://example.com/x Authorization: Bearer abcdefgh12345678 eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefgh");
      }
      sb.append('\n');
    }
    byte[] data = sb.toString().getBytes(StandardCharsets.UTF_8);
    double[] mbps = new double[iterations];
    for (int it = -1; it < iterations; it++) {
      RedactingStream s = r.stream();
      long t0 = System.nanoTime();
      long out = 0;
      for (int off = 0; off < data.length; off += 65536) {
        out += s.feed(data, off, Math.min(65536, data.length - off)).length;
      }
      out += s.finish().length;
      double secs = (System.nanoTime() - t0) / 1e9;
      if (it >= 0) {
        mbps[it] = data.length / 1e6 / secs;
      }
      if (out == 0) {
        throw new IllegalStateException("redaction produced nothing");
      }
    }
    return mbps;
  }
}
