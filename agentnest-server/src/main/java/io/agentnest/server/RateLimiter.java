package io.agentnest.server;

import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.tenancy.Tenant;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.LongSupplier;

/** A token bucket per tenant holding one second of requests. */
final class RateLimiter {
  private static final long SECOND = 1_000_000_000L;
  private static final int MAX_BUCKETS = 10_000;

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
    acquire(t.name(), t.requestsPerSecond(), "requests_per_second");
  }

  /** A 429 naming {@code quota} when the bucket {@code key} is empty; takes nothing. */
  synchronized void check(String key, int perSecond, String quota) {
    Bucket b = buckets.get(key);
    if (b == null) {
      return;
    }
    int rate = Math.max(1, perSecond);
    double tokens =
        Math.min(rate, b.tokens + (nanos.getAsLong() - b.last) * (double) rate / SECOND);
    if (tokens < 1) {
      throw full(quota, rate);
    }
  }

  private static ApiException full(String quota, int rate) {
    return new ApiException(
        429,
        ErrorCode.QUOTA,
        "quota '" + quota + "' is full: limit " + rate + ", in use " + rate,
        "slow down: retry after the Retry-After header's seconds",
        Map.of("quota", quota, "limit", rate, "used", rate));
  }

  /** Takes one token from the bucket {@code key}; a 429 naming {@code quota} when empty. */
  synchronized void acquire(String key, int perSecond, String quota) {
    int rate = Math.max(1, perSecond);
    long now = nanos.getAsLong();
    if (buckets.size() > MAX_BUCKETS && !buckets.containsKey(key)) {
      // Bounded memory whatever the number of callers; a cleared bucket starts full again.
      buckets.clear();
    }
    Bucket b = buckets.computeIfAbsent(key, k -> new Bucket(rate, now));
    b.tokens = Math.min(rate, b.tokens + (now - b.last) * (double) rate / SECOND);
    b.last = now;
    if (b.tokens < 1) {
      throw full(quota, rate);
    }
    b.tokens -= 1;
  }
}
