package io.agentnest.server.service;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalPolicy;
import io.agentnest.NetworkPolicy;
import io.agentnest.server.approvals.ApprovalQueue;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.Tenant;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * The approvals every sandbox of a tenant has at least (the server's {@code policy.approvals}
 * narrowed by the tenant's floor) and the handler that sends its questions to the tenant's queue.
 * Applied to every way the server gets hold of a sandbox: create, restore (a snapshot saved before
 * the floor was raised carries the rules of its day), fork (the copy inherits the parent's) and
 * adoption after a restart (a reattached handle carries no rules or handler of its own).
 */
public final class ApprovalFloor {
  private final ServerConfig config;
  private final ApprovalQueue approvals;

  ApprovalFloor(ServerConfig config, ApprovalQueue approvals) {
    this.config = config;
    this.approvals = approvals;
  }

  /**
   * The rules and handler for a sandbox of {@code t} that asked for {@code asked}.
   *
   * @param policy the rules (never looser than the floor), or null when none are active
   * @param handler the tenant's queue, or null when nothing can ask
   */
  public record Applied(@Nullable ApprovalPolicy policy, @Nullable ApprovalHandler handler) {
    public ApprovalPolicy rules() {
      return policy == null ? ApprovalPolicy.none() : policy;
    }
  }

  /**
   * @param asked the rules the request (or the saved sandbox) has; they add to the floor
   * @param askHosts whether the sandbox may ask about unknown hosts (its handler is then needed
   *     even without approval rules)
   */
  public Applied apply(Tenant t, ApprovalPolicy asked, boolean askHosts) {
    Policies.Effective p = Policies.effective(config.policy(), t);
    ApprovalPolicy combined = p.approvalFloor().stricter(asked);
    ApprovalPolicy policy = combined.isInactive() ? null : combined;
    ApprovalHandler handler = policy != null || askHosts ? handler(t, p, policy) : null;
    return new Applied(policy, handler);
  }

  /**
   * The sandbox's approval handler: its questions go to the tenant's queue, each waiting as long as
   * the policy that asks it does; a network question about a host outside the server's (and
   * tenant's) {@code ask_hosts} is denied at once, so no person is asked what the policy forbids.
   */
  private ApprovalHandler handler(Tenant t, Policies.Effective p, @Nullable ApprovalPolicy policy) {
    ApprovalHandler network =
        approvals.handlerFor(t.name(), NetworkPolicy.DEFAULT_APPROVAL_TIMEOUT);
    ApprovalHandler operations =
        policy == null ? network : approvals.handlerFor(t.name(), policy.timeout());
    return request -> {
      if (!"network".equals(request.kind())) {
        return operations.decide(request);
      }
      String target = request.target();
      int colon = target.lastIndexOf(':');
      String host = colon < 0 ? target : target.substring(0, colon);
      if (!p.mayAsk(host)) {
        return CompletableFuture.completedFuture(
            new ApprovalDecision(
                false, host + " is outside the server's policy.ask_hosts", "server"));
      }
      return network.decide(request);
    };
  }
}
