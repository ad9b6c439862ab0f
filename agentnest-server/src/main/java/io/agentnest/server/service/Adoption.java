package io.agentnest.server.service;

import io.agentnest.Sandbox;
import io.agentnest.SandboxInfo;
import io.agentnest.SandboxPool;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiFunction;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A server's start on a tenant store that sandboxes outlived: each still running is adopted by its
 * tenant again. Who owns a sandbox is read from the labels this store wrote at create, which the
 * sandbox cannot change, never from anything the sandbox says; one that cannot be reached is left
 * to its TTL and {@code agentnest prune}.
 */
public final class Adoption {
  private static final Logger LOG = LoggerFactory.getLogger(Adoption.class);

  private Adoption() {}

  /**
   * Adopts what {@code list} finds of this store into {@code registry}, each through {@code
   * connect}.
   *
   * @return how many were adopted
   */
  public static int adopt(
      TenantStore tenants,
      Registry registry,
      Supplier<List<SandboxInfo>> list,
      BiFunction<String, Tenant, Sandbox> connect) {
    String store = tenants.storeId();
    int adopted = 0;
    List<SandboxInfo> found;
    try {
      found = list.get();
    } catch (RuntimeException e) {
      // No engine now: nothing to adopt, and creates will say what is wrong when they are made.
      LOG.warn("cannot list the engine's sandboxes to adopt them: {}", e.toString());
      return 0;
    }
    for (SandboxInfo info : found) {
      String tenant = info.labels().get(SandboxService.TENANT_LABEL);
      // An idle pool member (the local engine's warm pools) was never a tenant's sandbox: it is
      // left to its owner-pid label and TTL, as prune sees it.
      if (tenant == null
          || !store.equals(info.labels().get(SandboxService.STORE_LABEL))
          || registry.contains(info.id())
          || SandboxPool.isIdleMember(info)) {
        continue;
      }
      Tenant owner = tenants.find(tenant).orElse(null);
      if (owner == null) {
        // A removed tenant's sandbox is left to its TTL and prune: nobody may use it.
        continue;
      }
      try {
        Sandbox sb = connect.apply(info.id(), owner);
        registry.adopt(
            new Registry.Entry(
                tenant,
                sb,
                info.image(),
                sb.config().memoryBytes(),
                sb.config().cpus(),
                info.created(),
                ConcurrentHashMap.newKeySet()));
        adopted++;
      } catch (RuntimeException e) {
        LOG.warn("cannot adopt sandbox {} of tenant {}: {}", info.id(), tenant, e.toString());
      }
    }
    if (adopted > 0) {
      LOG.info("adopted {} sandboxes left running by a previous server", adopted);
    }
    return adopted;
  }
}
