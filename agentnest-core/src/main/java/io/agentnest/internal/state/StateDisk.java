package io.agentnest.internal.state;

import io.agentnest.Sizes;
import io.agentnest.spi.support.DiskGuard;
import java.nio.file.Path;

/**
 * The free-disk reserve for what AgentNest writes of a sandbox's state on the host (snapshots, fork
 * spills): {@value #ENV} (default 512 MiB; 0 turns the check off).
 */
public final class StateDisk {
  static final String ENV = "AGENTNEST_STATE_MIN_FREE_DISK";
  static final long DEFAULT_RESERVE = 512L << 20;

  private StateDisk() {}

  /** The reserve: {@value #ENV} when set (a size such as {@code 2g}), else 512 MiB. */
  static long reserve() {
    String v = System.getenv(ENV);
    return v == null || v.isBlank() ? DEFAULT_RESERVE : Sizes.parse(ENV, v);
  }

  /** A guard for state written under {@code dir}. */
  static DiskGuard guard(Path dir) {
    return guard(dir, DiskGuard.FILESYSTEM);
  }

  public static DiskGuard guard(Path dir, DiskGuard.FreeSpace free) {
    return new DiskGuard(
        dir,
        reserve(),
        free,
        "sandbox state is not written to " + dir,
        "free disk space, or lower the reserve with " + ENV + " (e.g. 256m)");
  }
}
