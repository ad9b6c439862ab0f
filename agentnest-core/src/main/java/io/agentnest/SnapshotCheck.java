package io.agentnest;

import org.jspecify.annotations.Nullable;

/**
 * One snapshot of the store as its checks found it: its info when they pass, or the problem that
 * would make a restore refuse it (a manifest that does not verify, a part missing, resized or, when
 * parts are hashed, changed).
 *
 * @param name the snapshot's directory name in the store
 * @param info what it holds; null when its manifest does not verify
 * @param problem why a restore would refuse it; null when every check passed
 */
public record SnapshotCheck(String name, @Nullable SnapshotInfo info, @Nullable String problem) {
  /** Whether every check passed. */
  public boolean ok() {
    return problem == null;
  }
}
