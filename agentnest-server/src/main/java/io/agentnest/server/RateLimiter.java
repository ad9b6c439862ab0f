package io.agentnest.server;

import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;

/** A token bucket per tenant holding one second of requests. */
final class RateLimiter {
  private static final long SECOND = 1_000_000_000L;

  private final LongSupplier nanos;
  private final Map<String, Bucket> buckets = new HashMap<>();

  private static final class Bucket {
    double tokens;
    long last;

    Bucket(double tokens, long last) {
      this.tokens = tokens;
      this.last = last;
    }
  }

  RateLimiter(LongSupplier nanos) {
    this.nanos = Objects.requireNonNull(nanos);
  }

  /** Takes one token; throws a 429 naming the quota when there is none. */
  synchronized void acquire(Tenant t) {
    int rate = Math.max(1, t.requestsPerSecond());
    long now = nanos.getAsLong();
    Bucket b = buckets.computeIfAbsent(t.name(), k -> new Bucket(rate, now));
    b.tokens = Math.min(rate, b.tokens + (now - b.last) * (double) rate / SECOND);
    b.last = now;
    if (b.tokens < 1) {
      throw new ApiException(
          429,
          ErrorCode.QUOTA,
          "quota 'requests_per_second' is full: limit " + rate + ", in use " + rate,
          "slow down: retry after the Retry-After header's seconds",
          Map.of("quota", "requests_per_second", "limit", rate, "used", rate));
    }
    b.tokens -= 1;
  }
}
