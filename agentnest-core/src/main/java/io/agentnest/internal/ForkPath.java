package io.agentnest.internal;

import io.agentnest.SandboxConfig;
import io.agentnest.spi.RuntimeBackend;

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
   * Whether forks copy process memory: where the backend checkpoints memory (gVisor, microVM
   * guests), unless the sandbox has secret variables. A checkpoint writes the memory, secret values
   * in it, to disk (the engine's data root, a guest's migration stream); secret values never go to
   * disk.
   */
  static boolean byCheckpoint(RuntimeBackend backend, SandboxConfig config, boolean attached) {
    return backend.checkpointsMemory(config) && config.secretEnv().isEmpty() && !attached;
  }

  /**
   * Whether memory would have been copied but for the sandbox's secret variables, or for this
   * handle having attached to the sandbox ({@code Sandbox.connect}): such a handle cannot know the
   * sandbox's secret variables, so it never checkpoints memory.
   */
  static boolean withheldForSecrets(
      RuntimeBackend backend, SandboxConfig config, boolean attached) {
    return backend.checkpointsMemory(config) && (!config.secretEnv().isEmpty() || attached);
  }

  /** The state-transfer path when no checkpoint was taken. */
  static ForkPath transfer(boolean hasBulkDirectory) {
    return hasBulkDirectory ? BULK_LINK : CHANNEL;
  }
}
