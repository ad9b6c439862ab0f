package io.agentnest.server.metrics;

import io.agentnest.ApprovalDecision;
import io.agentnest.NetworkEvent;
import io.agentnest.audit.ShippingStats;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.function.ToLongFunction;
import org.jspecify.annotations.Nullable;

/**
 * What {@code GET /metrics} shows. Counted as it happens: every HTTP request by route template,
 * method, status and error code, with its latency ({@code agentnest_http_server_requests_seconds});
 * egress connections by decision and their bytes; approval decisions by outcome. Read on each
 * scrape: sandboxes by tenant and state, approvals waiting, each audit collector's sent and dropped
 * records; and the JVM's memory, threads, CPU and uptime.
 */
public final class ServerMetrics {
  /** The content type of the text exposition format this answers with. */
  public static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

  /** A request's latency buckets: from a health check to a fork or a long execution. */
  private static final Duration[] LATENCY_BUCKETS = {
    Duration.ofMillis(1),
    Duration.ofMillis(5),
    Duration.ofMillis(10),
    Duration.ofMillis(25),
    Duration.ofMillis(50),
    Duration.ofMillis(100),
    Duration.ofMillis(250),
    Duration.ofMillis(500),
    Duration.ofSeconds(1),
    Duration.ofMillis(2500),
    Duration.ofSeconds(5),
    Duration.ofSeconds(10),
    Duration.ofSeconds(30),
    Duration.ofSeconds(60)
  };

  private final PrometheusMeterRegistry registry =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final MultiGauge sandboxes;
  private final List<Runnable> beforeScrape = new ArrayList<>();
  private final Counter egressUp;
  private final Counter egressDown;

  public ServerMetrics() {
    new JvmMemoryMetrics().bindTo(registry);
    new JvmThreadMetrics().bindTo(registry);
    new ProcessorMetrics().bindTo(registry);
    new UptimeMetrics().bindTo(registry);
    sandboxes =
        MultiGauge.builder("agentnest.sandboxes")
            .description("sandboxes this server holds, by tenant and state (E2B pauses: paused)")
            .register(registry);
    egressUp =
        Counter.builder("agentnest.egress.bytes")
            .description("bytes through the egress proxy")
            .tag("direction", "up")
            .register(registry);
    egressDown =
        Counter.builder("agentnest.egress.bytes")
            .description("bytes through the egress proxy")
            .tag("direction", "down")
            .register(registry);
  }

  /** One finished HTTP request; {@code code} is the error code of a refusal (null: none). */
  public void request(String method, String route, int status, @Nullable String code, long nanos) {
    Timer.builder("agentnest.http.server.requests")
        .description("HTTP requests by route template, method, status and error code")
        .tags("method", method, "route", route, "status", Integer.toString(status))
        .tag("code", code == null ? "none" : code)
        .serviceLevelObjectives(LATENCY_BUCKETS)
        .register(registry)
        .record(nanos, TimeUnit.NANOSECONDS);
  }

  /** Counts each egress attempt of the server's sandboxes by decision, and its bytes. */
  public Consumer<NetworkEvent> egress() {
    return e -> {
      Counter.builder("agentnest.egress.connections")
          .description("connection attempts through the egress proxy, by decision")
          .tag("decision", e.decision().name().toLowerCase(Locale.ROOT))
          .register(registry)
          .increment();
      egressUp.increment(Math.max(0, e.bytesUp()));
      egressDown.increment(Math.max(0, e.bytesDown()));
    };
  }

  /**
   * Counts each approval decision: {@code approved}, {@code denied} by a person, or {@code
   * denied_by_server} (no answer in time, too many waiting, the queue unavailable).
   */
  public Consumer<ApprovalDecision> approvals() {
    return d -> {
      String outcome =
          d.allowed() ? "approved" : "server".equals(d.decidedBy()) ? "denied_by_server" : "denied";
      Counter.builder("agentnest.approvals.decided")
          .description("approval questions decided, by outcome")
          .tag("outcome", outcome)
          .register(registry)
          .increment();
    };
  }

  /** Approval questions waiting for an answer now. */
  public void approvalsWaiting(Supplier<Number> waiting) {
    Gauge.builder("agentnest.approvals.waiting", waiting)
        .description("approval questions waiting for a person")
        .strongReference(true)
        .register(registry);
  }

  /**
   * Sandboxes by tenant, read at each scrape: {@code running} from the server's registry, {@code
   * paused} from the E2B face's pauses.
   */
  public void sandboxes(
      Supplier<Map<String, Integer>> running, Supplier<Map<String, Integer>> paused) {
    beforeScrape.add(
        () -> {
          List<MultiGauge.Row<?>> rows = new ArrayList<>();
          running.get().forEach((t, n) -> rows.add(row(t, "running", n)));
          paused.get().forEach((t, n) -> rows.add(row(t, "paused", n)));
          sandboxes.register(rows, true);
        });
  }

  private static MultiGauge.Row<?> row(String tenant, String state, int n) {
    return MultiGauge.Row.of(Tags.of("tenant", tenant, "state", state), n);
  }

  /** Each audit collector's records sent and dropped, by target, read at each scrape. */
  public void auditShipping(Supplier<List<ShippingStats>> stats) {
    beforeScrape.add(
        () -> {
          for (ShippingStats s : stats.get()) {
            register(stats, s.target(), "sent", ShippingStats::sent);
            register(stats, s.target(), "dropped", ShippingStats::dropped);
          }
        });
  }

  private void register(
      Supplier<List<ShippingStats>> stats,
      String target,
      String what,
      ToLongFunction<ShippingStats> count) {
    FunctionCounter.builder(
            "agentnest.audit.shipping." + what,
            stats,
            all -> all.get().stream().filter(s -> s.target().equals(target)).mapToLong(count).sum())
        .description("audit records " + what + " per collector")
        .tag("target", target)
        .register(registry);
  }

  /** The text exposition of every metric, as a scrape reads it. */
  public synchronized String scrape() {
    beforeScrape.forEach(Runnable::run);
    return registry.scrape();
  }

  /** Every meter, for tests and the benchmark. */
  PrometheusMeterRegistry registry() {
    return registry;
  }
}
