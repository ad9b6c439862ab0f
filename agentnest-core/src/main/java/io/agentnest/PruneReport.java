package io.agentnest;

import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * What {@link Sandbox#prune} did (or, on a dry run, would do).
 *
 * @param items every resource it looked at and removed (or would remove)
 * @param freedBytes disk space given back, as the backend reported the sizes
 * @param stateFilesRemoved host-side state files of sandboxes that no longer exist
 * @param dryRun whether nothing was removed
 */
public record PruneReport(
    List<Item> items, long freedBytes, int stateFilesRemoved, boolean dryRun) {
  public PruneReport {
    items = List.copyOf(items);
  }

  /**
   * One resource.
   *
   * @param kind what it is, e.g. {@code container}, {@code network}, {@code snapshot-staging}
   * @param id the backend's id, or the staging name
   * @param reason why it is removed, e.g. {@code expired at ...}, {@code owner process 4242 is
   *     gone}, {@code stopped (state exited)}
   * @param sizeBytes its size as the backend reported it; negative when unknown
   * @param removed whether it was removed
   * @param error why removing it failed, or null
   */
  public record Item(
      String kind,
      String id,
      String reason,
      long sizeBytes,
      boolean removed,
      @Nullable String error) {}
}
