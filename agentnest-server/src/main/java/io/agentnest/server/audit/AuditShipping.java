package io.agentnest.server.audit;

import io.agentnest.audit.AuditLog;
import io.agentnest.audit.ShippingSink;
import io.agentnest.audit.ShippingStats;
import io.agentnest.server.config.AuditShippingConfig;
import io.agentnest.server.http.Exchange;
import io.javalin.http.Context;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The server's audit shipping: the {@code audit.sinks} of {@code server.yaml} added to the shared
 * audit log at start and removed (flushed, closed) at stop; {@code GET /v1/audit/shipping} shows
 * their counters.
 */
public final class AuditShipping {
  private static final Logger LOG = LoggerFactory.getLogger(AuditShipping.class);

  private final List<ShippingSink> sinks = new CopyOnWriteArrayList<>();

  /** Opens every sink; when one cannot start, the ones already open are closed and it throws. */
  public void start(AuditShippingConfig config, Map<String, String> env) {
    List<ShippingSink> opened = new ArrayList<>();
    try {
      for (AuditShippingConfig.Sink s : config.sinks()) {
        opened.add(s.open(env));
        LOG.info("audit records are shipped to {}", s.describe());
      }
    } catch (RuntimeException e) {
      opened.forEach(ShippingSink::close);
      throw e;
    }
    for (ShippingSink s : opened) {
      AuditLog.shared().addSink(s);
      sinks.add(s);
    }
  }

  /** Removes the sinks from the log; each flushes what it can within its bound, then stops. */
  public void stop() {
    for (ShippingSink s : sinks) {
      AuditLog.shared().removeSink(s);
    }
    sinks.clear();
  }

  /** Each collector's counters now. */
  public List<ShippingStats> stats() {
    return sinks.stream().map(ShippingSink::stats).toList();
  }

  /** GET /v1/audit/shipping: each collector's counters (no secrets: targets without headers). */
  public void get(Context ctx) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (ShippingStats s : stats()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("target", s.target());
      m.put("sent", s.sent());
      m.put("dropped", s.dropped());
      m.put("gaps", s.gaps());
      m.put("queued", s.queued());
      m.put("connected", s.connected());
      m.put("last_error", s.lastError() == null ? "" : s.lastError());
      out.add(m);
    }
    Exchange.json(ctx, 200, Map.of("sinks", out));
  }
}
