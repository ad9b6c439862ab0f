package io.agentnest.cli;

import io.agentnest.ConfigException;
import io.agentnest.Sizes;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.tenancy.ApiKey;
import io.agentnest.server.tenancy.KeyRole;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.server.tenancy.TenantStore;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code agentnest tenant}: tenants and API keys of {@code agentnest serve}. */
@Command(
    name = "tenant",
    mixinStandardHelpOptions = true,
    description = {
      "Manages the tenants of `agentnest serve` and their API keys (stored hashed under"
          + " AGENTNEST_HOME/server; a key is printed once, when it is made).",
      "  agentnest tenant add search --max-sandboxes 20 --memory 16g --cpus 8",
      "  agentnest tenant key search --role approver",
      "  agentnest tenant set search --approver-role-required true",
      "  agentnest tenant ls",
      "  agentnest tenant revoke ank_0123456789abcdef",
      "  agentnest tenant admin-key",
      "  agentnest tenant ls --config server.yaml   (the store server.yaml names)"
    },
    subcommands = {
      TenantCommand.Add.class,
      TenantCommand.Key.class,
      TenantCommand.Settings.class,
      TenantCommand.Ls.class,
      TenantCommand.Revoke.class,
      TenantCommand.AdminKey.class
    })
final class TenantCommand {
  private TenantCommand() {}

  static @Nullable Instant expiry(@Nullable String expires) {
    if (expires == null) {
      return null;
    }
    try {
      return Instant.now().plus(ServerConfig.duration("--expires", expires));
    } catch (IllegalArgumentException e) {
      throw new ConfigException(String.valueOf(e.getMessage()));
    }
  }

  @Command(
      name = "add",
      mixinStandardHelpOptions = true,
      description = "Adds a tenant; prints its API key once.")
  static final class Add implements Callable<Integer> {
    @Mixin TenantStoreOption store = new TenantStoreOption();

    @Parameters(paramLabel = "NAME", description = "lower-case letters, digits and '-'")
    String name = "";

    @Option(names = "--max-sandboxes", description = "Sandboxes at once (default 10).")
    int maxSandboxes = 10;

    @Option(names = "--memory", description = "Total memory of its sandboxes at once (default 8g).")
    String memory = "8g";

    @Option(names = "--cpus", description = "Total CPUs of its sandboxes at once (default 4).")
    double cpus = 4;

    @Option(names = "--rps", description = "Requests per second (default 50).")
    int rps = 50;

    @Option(
        names = "--executions-per-minute",
        description = "exec and code calls per sliding minute, 0 for no limit (default 600).")
    int executionsPerMinute = Tenant.DEFAULT_EXECUTIONS_PER_MINUTE;

    @Option(
        names = "--max-sandbox-memory",
        description = "Per-sandbox memory cap, below the server's (default: the server's).")
    @Nullable String maxSandboxMemory;

    @Option(
        names = "--allow-host",
        description =
            "An egress host its sandboxes may ask for (repeat); narrows the server's list.")
    @Nullable List<String> allowHosts;

    @Option(
        names = "--approvals",
        description =
            "Approval rules every sandbox of the tenant has at least: none or recommended"
                + " (default: the server's policy.approvals alone).")
    @Nullable String approvals;

    @Option(
        names = "--max-snapshots",
        description =
            "Snapshots it may keep, E2B pauses included (default: the server's"
                + " policy.max_snapshots).")
    @Nullable Integer maxSnapshots;

    @Option(
        names = "--snapshot-bytes",
        description =
            "Total size of its snapshots, e.g. 5g (default: the server's"
                + " policy.max_snapshot_bytes).")
    @Nullable String snapshotBytes;

    @Option(
        names = "--max-pids",
        description =
            "The highest pidsLimit its sandboxes may ask for, at least 8 (default: the server's"
                + " policy.max_pids).")
    @Nullable Long maxPids;

    @Option(
        names = "--approver-role-required",
        description =
            "Only approver keys (`tenant key NAME --role approver`) and the admin console answer"
                + " its approval questions, not its agent keys (default: the server's"
                + " policy.approver_role_required).")
    boolean approverRoleRequired;

    @Option(names = "--expires", description = "The key stops working after this, e.g. 30d, 12h.")
    @Nullable String expires;

    @Override
    public Integer call() {
      if ((maxSnapshots != null && maxSnapshots < 0) || (maxPids != null && maxPids < 8)) {
        throw new ConfigException(
            "--max-snapshots must be 0 or more and --max-pids at least 8, e.g. --max-snapshots 10"
                + " --max-pids 512");
      }
      if (approvals != null && !approvals.equals("none") && !approvals.equals("recommended")) {
        throw new ConfigException(
            "--approvals '"
                + approvals
                + "' is not none or recommended: e.g. --approvals recommended");
      }
      if (executionsPerMinute < 0) {
        throw new ConfigException(
            "--executions-per-minute must be 0 (no limit) or positive, e.g. 600");
      }
      if (maxSandboxes < 1 || !(cpus > 0) || rps < 1) {
        throw new ConfigException(
            "--max-sandboxes, --cpus and --rps must be positive, e.g. --max-sandboxes 20 --cpus 8");
      }
      Tenant t =
          new Tenant(
              checked(name),
              maxSandboxes,
              Sizes.parse("--memory", memory),
              cpus,
              rps,
              maxSandboxMemory == null
                  ? null
                  : Sizes.parse("--max-sandbox-memory", maxSandboxMemory),
              allowHosts,
              executionsPerMinute,
              approvals,
              maxSnapshots,
              snapshotBytes == null ? null : Sizes.parse("--snapshot-bytes", snapshotBytes),
              maxPids,
              approverRoleRequired);
      try (TenantStore s = store.open()) {
        String key = s.add(t, expiry(expires));
        System.out.println(key);
        System.err.println(
            "tenant '"
                + name
                + "' added. The key above is shown once: give it as AGENTNEST_API_KEY.");
      } catch (IllegalArgumentException e) {
        throw new ConfigException(String.valueOf(e.getMessage()));
      }
      return ExitCodes.OK;
    }
  }

  @Command(
      name = "key",
      mixinStandardHelpOptions = true,
      description =
          "Issues another API key for a tenant; prints it once. An approver key (--role approver)"
              + " lists and answers the tenant's approval questions and nothing else.")
  static final class Key implements Callable<Integer> {
    @Mixin TenantStoreOption store = new TenantStoreOption();

    @Parameters(paramLabel = "NAME")
    String name = "";

    @Option(names = "--expires", description = "The key stops working after this, e.g. 30d, 12h.")
    @Nullable String expires;

    @Option(
        names = "--role",
        description =
            "agent (default: makes sandboxes, runs code, answers approvals unless an approver is"
                + " required) or approver (lists and answers approvals only).")
    String role = "agent";

    @Override
    public Integer call() {
      try (TenantStore s = store.open()) {
        KeyRole r = KeyRole.parse(role);
        System.out.println(s.issueKey(checked(name), expiry(expires), r));
        if (r == KeyRole.APPROVER) {
          System.err.println(
              "approver key issued. It is shown once: sign in to /console/ with it, or send it as"
                  + " the Bearer key to GET /v1/approvals and POST /v1/approvals/{id}.");
        }
      } catch (IllegalArgumentException e) {
        throw new ConfigException(String.valueOf(e.getMessage()));
      }
      return ExitCodes.OK;
    }
  }

  @Command(
      name = "set",
      mixinStandardHelpOptions = true,
      description = "Changes a tenant's settings.")
  static final class Settings implements Callable<Integer> {
    @Mixin TenantStoreOption store = new TenantStoreOption();

    @Parameters(paramLabel = "NAME")
    String name = "";

    @Option(
        names = "--approver-role-required",
        arity = "1",
        required = true,
        paramLabel = "true|false",
        description =
            "true: only approver keys and the admin console answer the tenant's approval"
                + " questions; its agent keys get 403. The server's policy.approver_role_required"
                + " applies whatever this says.")
    boolean approverRoleRequired;

    @Override
    public Integer call() {
      try (TenantStore s = store.open()) {
        if (!s.requireApproverRole(checked(name), approverRoleRequired)) {
          System.err.println("no tenant '" + name + "': `agentnest tenant ls` lists them");
          return ExitCodes.NOT_FOUND;
        }
      }
      System.err.println(
          "tenant '"
              + name
              + "': "
              + (approverRoleRequired
                  ? "only approver keys answer its approvals now; mint one with `agentnest tenant"
                      + " key "
                      + name
                      + " --role approver`"
                  : "its agent keys answer its approvals too (unless the server requires"
                      + " approvers)"));
      return ExitCodes.OK;
    }
  }

  @Command(
      name = "ls",
      mixinStandardHelpOptions = true,
      description = "Lists tenants, their quotas and key ids.")
  static final class Ls implements Callable<Integer> {
    @Mixin TenantStoreOption store = new TenantStoreOption();

    @Override
    public Integer call() {
      try (TenantStore s = store.open()) {
        System.out.printf(
            "%-24s %8s %10s %6s %6s %8s  %s%n",
            "TENANT", "SANDBOX", "MEMORY", "CPUS", "RPS", "EXEC/MIN", "KEYS");
        for (Tenant t : s.tenants()) {
          StringBuilder keys =
              new StringBuilder(t.approverRoleRequired() ? "(approvers answer) " : "");
          for (ApiKey k : s.keys(t.name())) {
            keys.append(keys.length() == 0 || keys.charAt(keys.length() - 1) == ' ' ? "" : ", ")
                .append(k.id())
                .append(k.role() == KeyRole.APPROVER ? " (approver)" : "")
                .append(k.revoked() != null ? " (revoked)" : "")
                .append(k.expires() != null ? " (expires " + k.expires() + ")" : "");
          }
          System.out.printf(
              "%-24s %8d %10s %6s %6d %8d  %s%n",
              t.name(),
              t.maxSandboxes(),
              Sizes.format(t.memoryBytes()),
              t.cpus(),
              t.requestsPerSecond(),
              t.executionsPerMinute(),
              keys);
        }
        for (ApiKey k : s.adminKeys()) {
          System.out.println(
              "admin key "
                  + k.id()
                  + (k.revoked() != null ? " (revoked)" : "")
                  + ", "
                  + k.created());
        }
      }
      return ExitCodes.OK;
    }
  }

  @Command(
      name = "admin-key",
      mixinStandardHelpOptions = true,
      description =
          "Issues an admin key for the web console; prints it once. Signed in with it, the"
              + " console shows every tenant's sandboxes, approvals and audit and answers any"
              + " tenant's questions (as console:admin); the /v1 API refuses it. Revoke it with"
              + " `tenant revoke`.")
  static final class AdminKey implements Callable<Integer> {
    @Mixin TenantStoreOption store = new TenantStoreOption();

    @Override
    public Integer call() {
      try (TenantStore s = store.open()) {
        System.out.println(s.issueAdminKey());
      }
      System.err.println(
          "admin key issued. It is shown once: sign in to /console/ with it; revoke it with"
              + " `agentnest tenant revoke ID`.");
      return ExitCodes.OK;
    }
  }

  @Command(
      name = "revoke",
      mixinStandardHelpOptions = true,
      description = "Revokes an API key (by its id or the whole key); it stops working at once.")
  static final class Revoke implements Callable<Integer> {
    @Mixin TenantStoreOption store = new TenantStoreOption();

    @Parameters(paramLabel = "KEY-ID")
    String key = "";

    @Override
    public Integer call() {
      String id = key.startsWith("ank_") && key.length() == 20 ? key.substring(4) : key;
      try (TenantStore s = store.open()) {
        if (!s.revoke(id)) {
          System.err.println("no active key '" + id + "': `agentnest tenant ls` lists the key ids");
          return ExitCodes.NOT_FOUND;
        }
      }
      System.err.println("key " + id + " revoked");
      return ExitCodes.OK;
    }
  }

  private static String checked(String name) {
    try {
      return TenantStore.checkName(name);
    } catch (IllegalArgumentException e) {
      throw new ConfigException(String.valueOf(e.getMessage()));
    }
  }
}
