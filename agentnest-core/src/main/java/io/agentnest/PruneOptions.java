package io.agentnest;

import java.time.Duration;
import org.jspecify.annotations.Nullable;

/**
 * What {@link Sandbox#prune} removes.
 *
 * @param all remove every managed resource, whatever its state (also live sandboxes)
 * @param olderThan only resources created longer ago than this; null for any age
 * @param dryRun report what would be removed, remove nothing
 */
public record PruneOptions(boolean all, @Nullable Duration olderThan, boolean dryRun) {}
