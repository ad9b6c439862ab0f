package io.agentnest.internal;

import io.agentnest.ConfigException;
import io.agentnest.Sandbox;
import io.agentnest.internal.state.StateBudget;
import io.agentnest.spi.support.DaemonThreads;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A sandbox's fork component: the spare copies {@code prepareForks(n)} keeps started, and the
 * choice of one {@link ForkPath} per fork (checkpoint, else bulk link, else channel). A failed fork
 * leaves no copy behind and the parent unchanged.
 */
final class Forks {
  private static final int MAX_COPIES = 64;
  private static final ExecutorService FORK_THREADS = DaemonThreads.pool("agentnest-fork");

  private final DefaultSandbox parent;
  // Started copies kept ready by prepareForks(n): taking one skips a container start.
  private final ConcurrentLinkedDeque<CompletableFuture<DefaultSandbox>> spares =
      new ConcurrentLinkedDeque<>();
  private volatile int sparesWanted;

  Forks(DefaultSandbox parent) {
    this.parent = parent;
  }

  void prepare(int n) {
    if (n < 0 || n > MAX_COPIES) {
      throw new ConfigException("prepareForks(" + n + "): keep 0 to 64 copies ready (0 stops it)");
    }
    parent.checkUsable();
    sparesWanted = n;
    while (spares.size() > n) {
      CompletableFuture<DefaultSandbox> extra = spares.pollLast();
      if (extra != null) {
        extra.thenAccept(DefaultSandbox::destroy);
      }
    }
    refill();
    for (CompletableFuture<DefaultSandbox> f : List.copyOf(spares)) {
      DaemonThreads.join(f);
    }
  }

  List<Sandbox> fork(int n) {
    if (n < 1 || n > MAX_COPIES) {
      throw new ConfigException("fork(" + n + "): ask for 1 to 64 copies at once");
    }
    parent.checkUsable();
    try {
      return copies(n);
    } finally {
      refill();
    }
  }

  /** Stops keeping spares and destroys those there are (the parent is being destroyed). */
  void stop() {
    sparesWanted = 0;
    destroySpares();
  }

  private List<Sandbox> copies(int n) {
    long t0 = System.nanoTime();
    if (ForkPath.byCheckpoint(parent.backend(), parent.config(), parent.attached())) {
      Optional<List<Sandbox>> withMemory = CheckpointFork.fork(parent, n, t0);
      if (withMemory.isPresent()) {
        return withMemory.get();
      }
    }
    // Copies start while the parent's state is captured: creating a container is the slow part.
    List<CompletableFuture<DefaultSandbox>> kids = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      kids.add(takeSpare());
    }
    boolean done = false;
    // The state a fork may carry: a multiple of this sandbox's memory limit, all parts together.
    StateBudget budget = StateBudget.of(parent.context());
    try {
      Optional<Path> bulk = parent.backend().bulkDirectory(parent.id());
      List<Sandbox> out =
          switch (ForkPath.transfer(bulk.isPresent())) {
            case BULK_LINK ->
                BulkLinkFork.fork(parent, bulk.orElseThrow(), kids, t0, budget, FORK_THREADS);
            case CHANNEL -> ChannelStateFork.fork(parent, kids, t0, budget, FORK_THREADS);
            case CHECKPOINT -> throw new IllegalStateException("a transfer is never a checkpoint");
          };
      done = true;
      return out;
    } finally {
      // Whatever went wrong (an Error included), no copy outlives a failed fork.
      if (!done) {
        for (CompletableFuture<DefaultSandbox> k : kids) {
          k.thenAccept(DefaultSandbox::destroy);
        }
      }
    }
  }

  private void refill() {
    while (!ForkPath.byCheckpoint(parent.backend(), parent.config(), parent.attached())
        && !parent.isDestroyed()
        && spares.size() < sparesWanted) {
      spares.add(
          CompletableFuture.supplyAsync(
              () -> {
                DefaultSandbox s = SandboxLauncher.create(parent.config());
                s.warmDefaultSession();
                return s;
              },
              FORK_THREADS));
    }
  }

  /**
   * Destroys the spares, waiting for those still starting: a process that ends right after must not
   * leave one behind.
   */
  private void destroySpares() {
    for (CompletableFuture<DefaultSandbox> f; (f = spares.pollFirst()) != null; ) {
      try {
        f.get(2, TimeUnit.MINUTES).destroy();
      } catch (ExecutionException e) {
        // it never started: nothing to destroy
      } catch (TimeoutException e) {
        f.thenAccept(DefaultSandbox::destroy);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        f.thenAccept(DefaultSandbox::destroy);
      } catch (RuntimeException e) {
        // destroying a spare is best effort; prune finds what is left
      }
    }
  }

  /** A spare when one is ready or on its way (its TTL starts now), else a new sandbox. */
  private CompletableFuture<DefaultSandbox> takeSpare() {
    CompletableFuture<DefaultSandbox> f;
    while ((f = spares.pollFirst()) != null) {
      if (!f.isDone()) {
        return f.thenApply(DefaultSandbox::restartTtl);
      }
      DefaultSandbox s = f.isCompletedExceptionally() ? null : f.join();
      if (s != null && s.isAlive() && !s.channel().expired()) {
        return CompletableFuture.completedFuture(s.restartTtl());
      }
      if (s != null) {
        s.destroy();
      }
    }
    return CompletableFuture.supplyAsync(
        () -> SandboxLauncher.create(parent.config()), FORK_THREADS);
  }
}
