package io.agentnest.spi;

import java.time.Instant;
import java.util.Map;

/**
 * Anything a backend created for AgentNest (container, network, volume, ...), found by its {@link
 * Labels}. {@code agentnest prune} decides from these what to remove.
 *
 * @param kind e.g. {@code container}, {@code network}, {@code volume}
 * @param id backend id
 * @param name human name
 * @param state backend state, e.g. {@code running}, {@code exited}; empty when not applicable
 * @param created creation time
 * @param sizeBytes bytes it holds on the host (writable layer, volume size), or -1 if unknown
 * @param labels its labels
 */
public record ManagedResource(
    String kind,
    String id,
    String name,
    String state,
    Instant created,
    long sizeBytes,
    Map<String, String> labels) {
  public ManagedResource {
    labels = Map.copyOf(labels);
  }

  /** Whether a container-like resource is still running. */
  public boolean running() {
    return state.equals("running") || state.equals("paused") || state.equals("restarting");
  }
}
