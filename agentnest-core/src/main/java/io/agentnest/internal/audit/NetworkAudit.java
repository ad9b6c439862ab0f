package io.agentnest.internal.audit;

import io.agentnest.NetworkEvent;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns each egress attempt into its audit records ({@code network.attempt}, and a {@code
 * policy.violation} for a denial) and hands it to the sandbox's own listeners.
 */
public final class NetworkAudit implements Consumer<NetworkEvent> {
  private static final Logger LOG = LoggerFactory.getLogger(NetworkAudit.class);

  private final Budget.Recorder audit;
  private final List<Consumer<NetworkEvent>> listeners;

  public NetworkAudit(Budget.Recorder audit, List<Consumer<NetworkEvent>> listeners) {
    this.audit = audit;
    this.listeners = List.copyOf(listeners);
  }

  @Override
  public void accept(NetworkEvent e) {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("method", e.method());
    d.put("host", e.host());
    d.put("port", e.port());
    if (e.resolvedAddress() != null) {
      d.put("address", e.resolvedAddress());
    }
    d.put("decision", e.decision().name());
    if (e.rule() != null) {
      d.put("rule", e.rule());
    }
    if (e.remembered()) {
      // A person's earlier answer about this target: the approval records are not repeated.
      d.put("remembered", true);
    }
    d.put("reason", e.reason());
    d.put("bytes_up", e.bytesUp());
    d.put("bytes_down", e.bytesDown());
    d.put("duration_ms", e.duration().toMillis());
    audit.record("network.attempt", d);
    if (e.decision() == NetworkEvent.Decision.DENIED) {
      Map<String, Object> v = new LinkedHashMap<>();
      v.put("kind", "network");
      v.put("target", e.host() + ":" + e.port());
      v.put("decision", "deny");
      v.put("reason", e.reason());
      audit.record("policy.violation", v);
    }
    for (Consumer<NetworkEvent> l : listeners) {
      try {
        l.accept(e);
      } catch (RuntimeException ex) {
        LOG.warn("network event listener failed", ex);
      }
    }
  }
}
