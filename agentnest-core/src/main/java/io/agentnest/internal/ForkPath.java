package io.agentnest.internal;

import io.agentnest.SandboxConfig;

/**
 * The ways a fork moves a sandbox's state into its copies, one strategy class each. Which one
 * applies is decided by the host from the configuration and the backend, never by the sandbox.
 */
enum ForkPath {
  /** Process memory through a checkpoint restored into each copy ({@link CheckpointFork}). */
  CHECKPOINT,
  /** Files and sessions streamed over the bulk link ({@link BulkLinkFork}). */
  BULK_LINK,
  /** Files and sessions as channel frames, spilled on the host ({@link ChannelStateFork}). */
  CHANNEL;

  /**
   * Whether forks copy process memory: on gVisor, unless the sandbox has secret variables. A
   * checkpoint writes the memory, secret values in it, under the engine's data root, and each copy
   * keeps its link to the image while it lives; secret values never go to disk.
   */
  static boolean byCheckpoint(SandboxConfig config) {
    return onGvisor(config) && config.secretEnv().isEmpty();
  }

  /** The state-transfer path when no checkpoint was taken. */
  static ForkPath transfer(boolean hasBulkDirectory) {
    return hasBulkDirectory ? BULK_LINK : CHANNEL;
  }

  static boolean onGvisor(SandboxConfig config) {
    String runtime = config.runtime();
    return runtime != null && (runtime.contains("gvisor") || runtime.contains("runsc"));
  }
}
