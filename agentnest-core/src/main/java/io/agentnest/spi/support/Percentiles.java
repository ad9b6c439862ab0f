package io.agentnest.spi.support;

import java.util.Arrays;

/** The one percentile every benchmark reports. */
public final class Percentiles {
  private Percentiles() {}

  /** Nearest-rank percentile of {@code values} ({@code p} in 0..100); the input is not changed. */
  public static double nearestRank(double[] values, double p) {
    double[] s = values.clone();
    Arrays.sort(s);
    int rank = (int) Math.ceil(p / 100.0 * s.length);
    return s[Math.max(0, Math.min(s.length - 1, rank - 1))];
  }
}
