package io.agentnest.internal;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ApprovalHandler;
import io.agentnest.NetworkEvent;
import io.agentnest.SandboxConfig;
import io.agentnest.UnsupportedControlException;
import io.agentnest.audit.AuditEvent;
import io.agentnest.internal.audit.Budget;
import io.agentnest.internal.audit.HostBudgets;
import io.agentnest.internal.audit.NetworkAudit;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.EgressTunnels;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.egress.CredentialAudit;
import io.agentnest.internal.egress.EgressProxy;
import io.agentnest.internal.egress.EgressResolvers;
import io.agentnest.internal.egress.Interception;
import io.agentnest.internal.egress.JavaTrustStore;
import io.agentnest.internal.lifecycle.SecurityPolicy;
import io.agentnest.internal.redact.Redactor;
import io.agentnest.internal.secrets.RedactedViews;
import io.agentnest.internal.support.Bounded;
import io.agentnest.internal.support.Json;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The network of a sandbox whose policy allows some: the host's {@link EgressProxy} behind the
 * agent's local listener, its connections carried as tunnels on the channel. Every attempt and
 * every approval it asks for is audited, with secrets masked (host names and targets are the
 * sandbox's choice).
 */
final class SandboxEgress {
  /** How long the sandbox's end waits for its open connections to finish their records. */
  static final Duration SHUTDOWN_WAIT = Duration.ofSeconds(2);

  private final String sandboxId;
  private final SandboxConfig config;
  private final AgentChannel channel;
  private final Redactor redactor;
  private final HostBudgets budgets;
  private volatile @Nullable EgressTunnels tunnels;
  private volatile @Nullable EgressProxy proxy;

  SandboxEgress(
      String sandboxId,
      SandboxConfig config,
      AgentChannel channel,
      Redactor redactor,
      HostBudgets budgets) {
    this.sandboxId = sandboxId;
    this.config = config;
    this.channel = channel;
    this.redactor = redactor;
    this.budgets = budgets;
  }

  /** Starts the proxy and the agent's listener; nothing when the policy allows no network. */
  void start(@Nullable Interception interception) {
    if (config.network().isNone()) {
      return;
    }
    EgressProxy proxy =
        new EgressProxy(
            config.network(),
            EgressResolvers.current(),
            redactedNetworkAudit(new NetworkAudit(budgets.audit(), config.networkListeners())),
            auditedApprovals(RedactedViews.approvals(redactor, config.approvalHandler())),
            sandboxId,
            interception,
            credentialAudit());
    EgressTunnels t =
        new EgressTunnels(
            channel, proxy, budgets.tunnels(), budgets.overBudget(Budget.Kind.EGRESS_TUNNELS));
    channel.onTunnelFrames(t);
    ObjectNode listen =
        Json.object().put(Ops.OP, Ops.OP_EGRESS_LISTEN).put("port", SecurityPolicy.EGRESS_PORT);
    byte[] payload = new byte[0];
    if (interception != null) {
      // The CA certificate (never its key) as PEM, for the bundle the agent writes, then the Java
      // trust store; "trust_store" is the length of that tail.
      byte[] pem = interception.ca().certificatePem().getBytes(StandardCharsets.US_ASCII);
      byte[] p12 = JavaTrustStore.build(interception.ca().certificate());
      payload = Arrays.copyOf(pem, pem.length + p12.length);
      System.arraycopy(p12, 0, payload, pem.length, p12.length);
      listen.put("trust_store", p12.length);
    }
    Frame f = channel.request(listen, payload, Duration.ofSeconds(10));
    if (f.ev().equals(Ops.EV_ERROR)) {
      throw new UnsupportedControlException(
          "cannot start the egress proxy endpoint in the sandbox: "
              + Bounded.text(f.header().path("message").asText(), 500));
    }
    tunnels = t;
    this.proxy = proxy;
  }

  /** The running proxy; null when the policy allows no network or it has not started. */
  @Nullable EgressProxy proxy() {
    return proxy;
  }

  /**
   * Ends the open tunnels (the sandbox is going away): each is closed and audited ({@code
   * network.attempt} with the bytes it moved and {@code why}) before this returns, so that the
   * records precede the sandbox's last one, and a process that exits right after still has them.
   */
  void close(String why) {
    EgressProxy p = proxy;
    if (p != null) {
      p.shutdown(why, SHUTDOWN_WAIT);
    }
    EgressTunnels t = tunnels;
    if (t != null) {
      t.closeAll();
    }
    if (p != null) {
      p.close();
    }
  }

  /** Every approval request and decision is audited: who, when, why, how long it waited. */
  private @Nullable ApprovalHandler auditedApprovals(@Nullable ApprovalHandler handler) {
    if (handler == null) {
      return null;
    }
    return req -> {
      long t0 = System.nanoTime();
      audit(
          "approval.requested",
          Map.of("kind", req.kind(), "target", req.target(), "detail", req.detail()));
      return handler
          .decide(req)
          .whenComplete(
              (d, err) -> {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("kind", req.kind());
                m.put("target", req.target());
                m.put("waited_ms", (System.nanoTime() - t0) / 1_000_000);
                if (d != null) {
                  m.put("allowed", d.allowed());
                  m.put("reason", d.reason());
                  m.put("decided_by", d.decidedBy());
                } else {
                  m.put("allowed", false);
                  m.put("reason", "handler failed: " + err);
                }
                audit("approval.decided", m);
              });
    };
  }

  private void audit(String type, Map<String, ?> data) {
    budgets.audit().record(type, data);
  }

  /**
   * Each use of a credential and each placeholder sent to the wrong host, by secret name; the path
   * is the sandbox's choice, so it is masked like every audit record ({@link
   * RedactedViews#auditData}).
   */
  private CredentialAudit credentialAudit() {
    return new CredentialAudit() {
      @Override
      public void used(
          String secretName, Kind kind, String host, String method, String path, int status) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("secret", secretName);
        m.put("kind", kind.name().toLowerCase(Locale.ROOT));
        m.put("host", host);
        m.put("method", method);
        m.put("path", path);
        m.put("status", status);
        audit(AuditEvent.NETWORK_CREDENTIAL_USED, RedactedViews.auditData(redactor, m));
      }

      @Override
      public void usedAgain(
          String secretName,
          Kind kind,
          String host,
          long repeated,
          Map<Integer, Long> statuses,
          String lastMethod,
          String lastPath) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("secret", secretName);
        m.put("kind", kind.name().toLowerCase(Locale.ROOT));
        m.put("host", host);
        m.put("method", lastMethod);
        m.put("path", lastPath);
        m.put("repeated", repeated);
        Map<String, Long> byStatus = new TreeMap<>();
        statuses.forEach((status, n) -> byStatus.put(String.valueOf(status), n));
        m.put("statuses", byStatus);
        audit(AuditEvent.NETWORK_CREDENTIAL_USED, RedactedViews.auditData(redactor, m));
      }

      @Override
      public void leakAttempt(
          String secretName, String ownerHost, String host, String method, String path) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("secret", secretName);
        m.put("owner_host", ownerHost);
        m.put("host", host);
        m.put("method", method);
        m.put("path", path);
        audit(AuditEvent.NETWORK_PLACEHOLDER_LEAK, RedactedViews.auditData(redactor, m));
      }

      @Override
      public void requestDenied(
          String host, String method, String path, String rule, String reason) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("host", host);
        m.put("method", method);
        m.put("path", path);
        m.put("rule", rule);
        m.put("reason", reason);
        audit(AuditEvent.NETWORK_REQUEST_DENIED, RedactedViews.auditData(redactor, m));
      }
    };
  }

  /** The host name is the sandbox's choice: a secret used as a DNS label is masked. */
  private Consumer<NetworkEvent> redactedNetworkAudit(NetworkAudit sink) {
    return attempt -> sink.accept(RedactedViews.networkEvent(redactor, attempt));
  }
}
