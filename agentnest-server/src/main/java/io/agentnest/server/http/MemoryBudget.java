package io.agentnest.server.http;

import io.javalin.http.Context;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The bytes the server may hold for request and response bodies at once, across every tenant (issue
 * 42, MEDIUM 6: ten concurrent 64 MiB exec outputs or eight archive downloads of one tenant ran the
 * server out of memory). A request reserves what it may buffer before it buffers it; when the
 * budget cannot give it, the request is refused with 503 naming the budget, and every other request
 * goes on. Reservations end when the request does.
 */
public final class MemoryBudget {
  public static final String ATTR = "agentnest.memory-budget";

  /**
   * The spool budget: the bytes of spool files ({@link Transfers}) on the server's disk at once, so
   * that streaming file bodies through disk cannot fill it either.
   */
  public static final String SPOOL_ATTR = "agentnest.spool-budget";

  private static final String LEASES = "agentnest.memory-leases";

  private final long total;
  private final boolean disk;
  private long used;

  public MemoryBudget(long total) {
    this(total, false);
  }

  private MemoryBudget(long total, boolean disk) {
    this.total = total;
    this.disk = disk;
  }

  /** A budget for spool files on disk rather than for memory. */
  public static MemoryBudget spool(long total) {
    return new MemoryBudget(total, true);
  }

  /**
   * Half of what the temporary directory's file system has free at start, at most 8 GiB: room for
   * about forty max_body transfers at once.
   */
  public static long defaultSpoolBytes() {
    try {
      long free =
          Files.getFileStore(Path.of(System.getProperty("java.io.tmpdir"))).getUsableSpace();
      return Math.max(64L << 20, Math.min(8L << 30, free / 2));
    } catch (IOException e) {
      return 1L << 30;
    }
  }

  /** Half the heap: the rest is for the sandboxes' channels, the audit and everything else. */
  public static long defaultBytes() {
    return Runtime.getRuntime().maxMemory() / 2;
  }

  /** What one reservation holds until it is released (once). */
  final class Lease implements AutoCloseable {
    private long bytes;

    private Lease(long bytes) {
      this.bytes = bytes;
    }

    @Override
    public void close() {
      synchronized (MemoryBudget.this) {
        used -= bytes;
        bytes = 0;
      }
    }
  }

  /**
   * Reserves {@code bytes} for {@code what} (e.g. "an upload body") until the request ends; 503
   * naming the budget when it is taken. Without a budget on the request (a test's bare context)
   * nothing is reserved.
   */
  public static void reserve(Context ctx, long bytes, String what) {
    reserve(ctx, ATTR, bytes, what);
  }

  /** Reserves spool file space for {@code what} until the request ends; 503 naming it if taken. */
  public static void reserveSpool(Context ctx, long bytes, String what) {
    reserve(ctx, SPOOL_ATTR, bytes, what);
  }

  private static void reserve(Context ctx, String attr, long bytes, String what) {
    MemoryBudget b = ctx.attribute(attr);
    if (b == null || bytes <= 0) {
      return;
    }
    Lease l = b.take(bytes, what);
    List<Lease> held = ctx.attribute(LEASES);
    if (held == null) {
      held = new ArrayList<>();
      ctx.attribute(LEASES, held);
    }
    held.add(l);
  }

  /** Ends every reservation of the request (its response is written or it failed). */
  public static void releaseAll(Context ctx) {
    List<Lease> held = ctx.attribute(LEASES);
    if (held != null) {
      held.forEach(Lease::close);
      held.clear();
    }
  }

  synchronized long used() {
    return used;
  }

  private synchronized Lease take(long bytes, String what) {
    if (bytes > total - used) {
      String name = disk ? "spool budget (disk for file transfers)" : "memory budget";
      throw new ApiException(
          503,
          ErrorCode.QUOTA,
          "the server's "
              + name
              + " is taken: "
              + what
              + " needs up to "
              + bytes
              + " bytes, and "
              + used
              + " of its "
              + total
              + " bytes are held by "
              + (disk ? "transfers" : "requests")
              + " in progress",
          disk
              ? "retry after the Retry-After seconds, or move smaller files; the operator frees"
                  + " disk under the server's temporary directory (the budget is half its free"
                  + " space, at most 8 GiB)"
              : "retry after the Retry-After seconds, or use smaller parts (lower"
                  + " maxOutputBytes); the operator raises the budget (half the server's heap)"
                  + " with -Xmx",
          Map.of("quota", disk ? "spool_budget" : "memory_budget", "limit", total, "used", used));
    }
    used += bytes;
    return new Lease(bytes);
  }
}
