package io.agentnest.internal.secrets;

import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalRequest;
import io.agentnest.NetworkEvent;
import io.agentnest.internal.redact.Redactor;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * Secrets masked in what the host writes down or shows about a sandbox, not only in its output: a
 * host name, a file name, a reason can carry a secret the sandbox chose to put there (a secret used
 * as a DNS label, say), and audit records go to disk and to log collectors, approval questions to
 * people, network events to the embedding program's listeners.
 */
public final class RedactedViews {
  private RedactedViews() {}

  /** Audit data with every string (keys too, at any depth) masked. */
  public static Map<String, Object> auditData(Redactor r, Map<String, ?> data) {
    Map<String, Object> out = new LinkedHashMap<>();
    data.forEach((k, v) -> out.put(text(r, k), value(r, v)));
    return out;
  }

  private static @Nullable Object value(Redactor r, @Nullable Object v) {
    if (v instanceof String s) {
      return text(r, s);
    }
    if (v instanceof Map<?, ?> m) {
      Map<String, Object> out = new LinkedHashMap<>();
      m.forEach((k, x) -> out.put(text(r, String.valueOf(k)), value(r, x)));
      return out;
    }
    if (v instanceof Collection<?> c) {
      List<@Nullable Object> out = new ArrayList<>(c.size());
      c.forEach(x -> out.add(value(r, x)));
      return out;
    }
    return v;
  }

  /** A network attempt as the audit log and the listeners see it. */
  public static NetworkEvent networkEvent(Redactor r, NetworkEvent e) {
    return new NetworkEvent(
        e.sandboxId(),
        e.time(),
        text(r, e.method()),
        text(r, e.host()),
        e.port(),
        e.resolvedAddress(),
        e.decision(),
        e.rule() == null ? null : text(r, e.rule()),
        text(r, e.reason()),
        e.bytesUp(),
        e.bytesDown(),
        e.duration());
  }

  /** The handler, asked with the request's target and detail masked (a person reads them). */
  public static @Nullable ApprovalHandler approvals(Redactor r, @Nullable ApprovalHandler handler) {
    if (handler == null) {
      return null;
    }
    return req ->
        handler.decide(
            new ApprovalRequest(
                req.sandboxId(),
                req.kind(),
                text(r, req.target()),
                text(r, req.detail()),
                req.requestedAt()));
  }

  private static String text(Redactor r, String s) {
    return r.redact(s, (rule, n) -> {});
  }
}
