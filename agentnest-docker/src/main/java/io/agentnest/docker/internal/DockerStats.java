package io.agentnest.docker.internal;

import com.github.dockerjava.api.DockerClient;
import com.github.dockerjava.api.async.ResultCallback;
import com.github.dockerjava.api.model.CpuStatsConfig;
import com.github.dockerjava.api.model.MemoryStatsConfig;
import com.github.dockerjava.api.model.Statistics;
import com.github.dockerjava.api.model.StatsConfig;
import io.agentnest.ResourceUsage;
import java.io.IOException;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;

/**
 * A container's CPU and memory in use, from one non-streaming stats call (the engine samples twice,
 * about a second apart, and answers once): nothing is left open after the answer or the timeout.
 */
final class DockerStats {
  /** Longer than the engine's own two-sample interval, short enough for a page to wait on. */
  static final long TIMEOUT_MILLIS = 5_000;

  private final DockerClient client;

  DockerStats(DockerClient client) {
    this.client = client;
  }

  Optional<ResourceUsage> usage(String id) {
    CompletableFuture<@Nullable Statistics> first = new CompletableFuture<>();
    ResultCallback.Adapter<Statistics> callback =
        new ResultCallback.Adapter<>() {
          @Override
          public void onNext(Statistics s) {
            first.complete(s);
          }

          @Override
          public void onError(Throwable t) {
            first.completeExceptionally(t);
          }

          @Override
          public void onComplete() {
            first.complete(null);
          }
        };
    try (ResultCallback.Adapter<Statistics> cb =
        client.statsCmd(id).withNoStream(true).exec(callback)) {
      return Optional.ofNullable(first.get(TIMEOUT_MILLIS, TimeUnit.MILLISECONDS))
          .flatMap(DockerStats::of);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    } catch (ExecutionException | TimeoutException | IOException | RuntimeException e) {
      // Gone, stopped, or an engine too slow to answer: no figure rather than an error.
      return Optional.empty();
    }
  }

  /** The figures {@code docker stats} shows, from one sample; empty when the engine gave none. */
  static Optional<ResourceUsage> of(Statistics s) {
    MemoryStatsConfig mem = s.getMemoryStats();
    if (mem == null || mem.getUsage() == null) {
      return Optional.empty();
    }
    long memory = mem.getUsage() - reclaimable(mem.getStats());
    long limit = mem.getLimit() == null ? 0 : mem.getLimit();
    return Optional.of(
        new ResourceUsage(
            cpus(s.getCpuStats(), s.getPreCpuStats()), Math.max(0, memory), limit, read(s)));
  }

  /** Page cache the kernel reclaims under pressure (cgroup v1 and v2 names), as the CLI does. */
  private static long reclaimable(@Nullable StatsConfig st) {
    if (st == null) {
      return 0;
    }
    for (Long v : new Long[] {st.getTotalInactiveFile(), st.getInactiveFile(), st.getCache()}) {
      if (v != null) {
        return v;
      }
    }
    return 0;
  }

  private static double cpus(@Nullable CpuStatsConfig now, @Nullable CpuStatsConfig before) {
    if (now == null || before == null || now.getCpuUsage() == null) {
      return 0;
    }
    Long total = now.getCpuUsage().getTotalUsage();
    Long system = now.getSystemCpuUsage();
    Long prevTotal = before.getCpuUsage() == null ? null : before.getCpuUsage().getTotalUsage();
    Long prevSystem = before.getSystemCpuUsage();
    if (total == null || system == null || prevTotal == null || prevSystem == null) {
      return 0;
    }
    long cpuDelta = total - prevTotal;
    long systemDelta = system - prevSystem;
    if (cpuDelta <= 0 || systemDelta <= 0) {
      return 0;
    }
    long online = now.getOnlineCpus() != null ? now.getOnlineCpus() : 1;
    if (online <= 0 && now.getCpuUsage().getPercpuUsage() != null) {
      online = now.getCpuUsage().getPercpuUsage().size();
    }
    // The system counter advances by every CPU's time, so the share times the CPUs is CPUs used.
    return (double) cpuDelta / systemDelta * Math.max(1, online);
  }

  private static Instant read(Statistics s) {
    try {
      return s.getRead() == null ? Instant.now() : Instant.parse(s.getRead());
    } catch (DateTimeParseException e) {
      return Instant.now();
    }
  }
}
