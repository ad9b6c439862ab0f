package io.agentnest.internal.egress;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * The credential uses of one intercepted connection, folded: the first use of each secret is
 * reported at once (a client that has its response finds the record), every later one on the same
 * connection is counted, and the counts go out as one record per secret when the connection ends.
 * So a connection costs the audit store at most two records per secret, whatever number of requests
 * it carries, and connections are bounded by the sandbox's tunnel budget.
 */
final class CredentialUses {
  private final CredentialAudit audit;
  private final String host;
  private final Map<String, Tally> tallies = new LinkedHashMap<>();

  private static final class Tally {
    final String secret;
    final CredentialAudit.Kind kind;
    long repeated;
    final Map<Integer, Long> statuses = new TreeMap<>();
    String lastMethod = "";
    String lastPath = "";

    Tally(String secret, CredentialAudit.Kind kind) {
      this.secret = secret;
      this.kind = kind;
    }
  }

  CredentialUses(CredentialAudit audit, String host) {
    this.audit = audit;
    this.host = host;
  }

  /** One request carried {@code secret}; {@code status} 0: no response. */
  void used(String secret, CredentialAudit.Kind kind, String method, String path, int status) {
    String key = kind + "\u0000" + secret;
    Tally t = tallies.get(key);
    if (t == null) {
      tallies.put(key, new Tally(secret, kind));
      audit.used(secret, kind, host, method, path, status);
      return;
    }
    t.repeated++;
    t.statuses.merge(status, 1L, Long::sum);
    t.lastMethod = method;
    t.lastPath = path;
  }

  /** The connection is over: one record per secret for the uses that were counted. */
  void close() {
    for (Tally t : tallies.values()) {
      if (t.repeated > 0) {
        audit.usedAgain(
            t.secret, t.kind, host, t.repeated, Map.copyOf(t.statuses), t.lastMethod, t.lastPath);
      }
    }
    tallies.clear();
  }
}
