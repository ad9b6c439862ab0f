package io.agentnest.server.service;

import io.agentnest.ApprovalPolicy;
import io.agentnest.NetworkPolicy;
import io.agentnest.Sizes;
import io.agentnest.server.config.ApprovalRules;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import io.agentnest.server.tenancy.Tenant;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * The server's policy narrowed by a tenant's: a tenant value can only be tighter (a smaller cap, a
 * sub-list of hosts); a looser one is ignored in favour of the server's.
 */
public final class Policies {
  private Policies() {}

  public record Effective(
      List<String> images,
      long maxMemoryBytes,
      double maxCpus,
      Duration maxTtl,
      List<String> allowHosts,
      List<String> runtimes,
      List<String> askHosts,
      @Nullable List<String> tenantHosts,
      List<String> allowAddresses,
      ApprovalPolicy approvalFloor,
      String tenant,
      long maxPids,
      int maxSnapshots,
      long maxSnapshotBytes) {

    /**
     * The pidsLimit a sandbox gets: the one asked for, refused (422 naming {@code policy.max_pids})
     * above the cap; when none is asked, the sandbox's default bounded by the cap.
     */
    long pids(@Nullable Long asked, long byDefault) {
      return pids(asked, "pidsLimit", byDefault);
    }

    /** As {@link #pids(Long, long)}, naming the request's {@code field} when it refuses. */
    long pids(@Nullable Long asked, String field, long byDefault) {
      if (asked == null) {
        return Math.min(byDefault, maxPids);
      }
      if (asked < 8 || asked > maxPids) {
        throw refuse(
            field,
            asked,
            "8.." + maxPids + " (policy.max_pids; the operator can raise it in server.yaml)");
      }
      return asked;
    }

    /** A memory-backed size within what a sandbox may use at most. */
    long checkSize(String field, long bytes) {
      if (bytes <= 0 || bytes > maxMemoryBytes) {
        throw refuse(field, bytes, "1.." + maxMemoryBytes);
      }
      return bytes;
    }

    /**
     * Refuses a runtime the server does not offer (a 422 naming it and the offered ones); null is
     * the engine's default runtime, always offered.
     */
    void checkRuntime(@Nullable String runtime) {
      if (runtime != null && !runtimes.contains(runtime)) {
        throw refuse(
            "runtime",
            "'" + Escape.id(runtime) + "'",
            runtimes.isEmpty() ? "none (the engine's default only)" : "one of " + runtimes);
      }
    }

    /** Refuses a request outside the policy with a 422 naming the rule and the allowed value. */
    void check(String image, long memory, double cpus, Duration ttl, List<String> hosts) {
      // "*": any image the engine has (the local single-user engine's policy; serve never loads
      // it).
      if (!images.contains(image) && !images.contains("*")) {
        throw refuse("image", image, "one of " + images);
      }
      if (memory <= 0 || memory > maxMemoryBytes) {
        throw refuse(
            "memoryBytes",
            memory,
            "at most " + Sizes.format(maxMemoryBytes) + " (" + maxMemoryBytes + " bytes)");
      }
      if (!(cpus > 0) || cpus > maxCpus) {
        throw refuse("cpus", cpus, "at most " + maxCpus);
      }
      if (ttl.isNegative() || ttl.isZero() || ttl.compareTo(maxTtl) > 0) {
        throw refuse("ttlSeconds", ttl.toSeconds(), "1.." + maxTtl.toSeconds());
      }
      for (String h : hosts) {
        if (!allowed(h)) {
          throw refuse(
              "allowHosts",
              Escape.id(h),
              allowHosts.isEmpty()
                  ? "none (no egress on this server)"
                  : "a host within " + allowHosts);
        }
      }
    }

    /** Refuses {@code askUnknownHosts} when this policy lets no host be asked about. */
    void checkAsk() {
      if (askHosts.isEmpty() || (tenantHosts != null && tenantHosts.isEmpty())) {
        throw refuse(
            "askUnknownHosts",
            true,
            askHosts.isEmpty()
                ? "false (no sandbox on this server may ask: its policy.ask_hosts is empty)"
                : "false (tenant " + tenant + " may reach no host beyond its allowlist)");
      }
    }

    /**
     * Whether a person may be asked about {@code host} (a name the egress proxy normalised): the
     * server's {@code ask_hosts} must cover it, and the tenant's own host list if it has one.
     */
    boolean mayAsk(String host) {
      boolean server = askHosts.contains("*") || matches(askHosts, host);
      return server && (tenantHosts == null || matches(tenantHosts, host));
    }

    private boolean allowed(String host) {
      return matches(allowHosts, host);
    }

    static boolean matches(List<String> rules, String host) {
      Optional<String> norm =
          NetworkPolicy.normalizeHost(host.startsWith("*.") ? host.substring(2) : host);
      if (norm.isEmpty()) {
        return false;
      }
      String h = host.startsWith("*.") ? "*." + norm.get() : norm.get();
      for (String rule : rules) {
        String r = rule.toLowerCase(Locale.ROOT);
        // "*": any host (the local single-user engine's policy: the user's own allowlist decides).
        if (r.equals("*") || r.equals(h)) {
          return true;
        }
        // "*.example.org" allows "a.example.org" and "*.a.example.org", never "example.org".
        if (r.startsWith("*.") && h.endsWith(r.substring(1))) {
          return true;
        }
      }
      return false;
    }

    private ApiException refuse(String field, Object asked, String allowed) {
      return new ApiException(
          422,
          ErrorCode.POLICY,
          "policy refuses " + field + " " + asked + " for tenant " + tenant,
          "ask for " + allowed,
          Map.of("field", field, "allowed", allowed));
    }
  }

  public static Effective effective(ServerConfig.Policy server, Tenant t) {
    long mem = server.maxMemoryBytes();
    Long tenantMem = t.maxSandboxMemoryBytes();
    if (tenantMem != null) {
      mem = Math.min(mem, tenantMem);
    }
    List<String> hosts = server.allowHosts();
    List<String> tenantHosts = t.allowHosts();
    if (tenantHosts != null) {
      // Keep only the tenant's hosts that the server's list also allows.
      List<String> kept = new ArrayList<>();
      for (String h : tenantHosts) {
        if (Effective.matches(server.allowHosts(), h)) {
          kept.add(h);
        }
      }
      hosts = kept;
    }
    return new Effective(
        server.images(),
        mem,
        server.maxCpus(),
        server.maxTtl(),
        hosts,
        server.runtimes(),
        server.askHosts(),
        tenantHosts,
        server.allowAddresses(),
        t.approvals() == null
            ? server.approvals()
            : server
                .approvals()
                .stricter(ApprovalRules.preset(t.approvals(), IllegalStateException::new)),
        t.name(),
        t.maxPids() == null ? server.maxPids() : Math.min(server.maxPids(), t.maxPids()),
        t.maxSnapshots() == null
            ? server.maxSnapshots()
            : Math.min(server.maxSnapshots(), t.maxSnapshots()),
        t.snapshotBytes() == null
            ? server.maxSnapshotBytes()
            : Math.min(server.maxSnapshotBytes(), t.snapshotBytes()));
  }

  static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }
}
