package io.agentnest;

import java.time.Instant;
import java.util.Objects;

/**
 * What a sandbox uses right now, as its engine measures it.
 *
 * @param cpus CPUs in use, averaged over the engine's last sampling interval (0.5 is half of one
 *     CPU; at most the sandbox's CPU limit)
 * @param memoryBytes memory in use without the reclaimable page cache (what {@code docker stats}
 *     shows)
 * @param memoryLimitBytes the memory limit the engine enforces, or 0 when it reports none
 * @param measuredAt when the engine took the sample
 */
public record ResourceUsage(
    double cpus, long memoryBytes, long memoryLimitBytes, Instant measuredAt) {
  public ResourceUsage {
    Objects.requireNonNull(measuredAt, "measuredAt");
    if (!(cpus >= 0) || memoryBytes < 0 || memoryLimitBytes < 0) {
      throw new IllegalArgumentException(
          "usage must be non-negative, got cpus="
              + cpus
              + " memoryBytes="
              + memoryBytes
              + " memoryLimitBytes="
              + memoryLimitBytes);
    }
  }
}
