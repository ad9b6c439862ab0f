package io.agentnest.spi;

/** Label keys every managed resource carries, so any process can find and reap it. */
public final class Labels {
  public static final String MANAGED = "agentnest.managed";
  public static final String OWNER = "agentnest.owner";
  public static final String OWNER_PID = "agentnest.owner-pid";
  public static final String OWNER_HOST = "agentnest.owner-host";

  /**
   * The installation that made it: {@code AgentNestHome.id()} of the creating process, so that
   * {@code agentnest ls} and {@code rm --all} act on one's own sandboxes by default.
   */
  public static final String HOME = "agentnest.home";

  public static final String CREATED = "agentnest.created";
  public static final String EXPIRES = "agentnest.expires";

  /** The sandbox's tenant ({@code SandboxConfig.tenant}), where one was given. */
  public static final String TENANT = "agentnest.tenant";

  /**
   * The warm pool a sandbox was started for ({@code SandboxPool}); on Docker it stays after
   * hand-out (labels are fixed at create), the host state then records the user.
   */
  public static final String POOL = "agentnest.pool";

  /**
   * When a pooled sandbox was handed out (epoch seconds), where the backend can set labels after
   * create (Kubernetes); absent on an idle member.
   */
  public static final String POOL_ACQUIRED = "agentnest.pool-acquired";

  /** Host directory mounted read-only at /run/agentnest: the bulk link for fork state. */
  public static final String BULK_DIR = "agentnest.bulk-dir";

  /**
   * The OCI runtime the engine runs the sandbox with, where the engine's list does not say it
   * (Docker): listing then needs one request, not one more per sandbox.
   */
  public static final String RUNTIME = "agentnest.runtime";

  public static final String VERSION = "agentnest.version";
  public static final String EXEC_TIMEOUT_MS = "agentnest.exec-timeout-ms";
  public static final String MAX_OUTPUT = "agentnest.max-output";

  /** The memory limit in bytes: what a handle from {@code connect} bounds fork and snapshot by. */
  public static final String MEMORY = "agentnest.memory-bytes";

  private Labels() {}
}
