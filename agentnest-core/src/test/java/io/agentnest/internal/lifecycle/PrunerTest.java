package io.agentnest.internal.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.groups.Tuple.tuple;

import io.agentnest.PruneOptions;
import io.agentnest.PruneReport;
import io.agentnest.spi.EngineFreeBackend;
import io.agentnest.spi.Labels;
import io.agentnest.spi.ManagedResource;
import io.agentnest.spi.support.HostProcess;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PrunerTest {
  /** A backend that lists what it is given and records what prune removes. */
  private static final class ListedBackend extends EngineFreeBackend {
    final List<ManagedResource> resources;
    final List<String> removed = new ArrayList<>();

    ListedBackend(List<ManagedResource> resources) {
      this.resources = resources;
    }

    @Override
    public String name() {
      return "listed";
    }

    @Override
    public void destroy(String id) {
      removed.add(id);
    }

    @Override
    public List<ManagedResource> resources() {
      return resources;
    }
  }

  private static ManagedResource container(String id, String owner, Instant expires) {
    return new ManagedResource(
        "container",
        id,
        id,
        "running",
        Instant.now().minusSeconds(3600),
        10,
        Map.of(Labels.OWNER, owner, Labels.EXPIRES, Long.toString(expires.getEpochSecond())));
  }

  @Test
  void thisProcessIsNeverAGoneOwner() {
    assertThat(Pruner.ownerGone(HostProcess.ownerId())).isNull();
  }

  @Test
  void dryRunReportsAnExpiredSandboxAndRemovesNothing() {
    ListedBackend b =
        new ListedBackend(
            List.of(
                container("expired-1", HostProcess.ownerId(), Instant.now().minusSeconds(60)),
                container("live-1", HostProcess.ownerId(), Instant.now().plusSeconds(3600))));

    PruneReport r = Pruner.prune(b, new PruneOptions(false, null, true));

    assertThat(r.dryRun()).isTrue();
    assertThat(r.items())
        .filteredOn(i -> i.kind().equals("container"))
        .extracting(PruneReport.Item::id, PruneReport.Item::removed)
        .containsExactly(tuple("expired-1", false));
    assertThat(r.items().get(0).reason()).startsWith("expired at");
    assertThat(b.removed).isEmpty();
  }

  @Test
  void pruneRemovesTheExpiredSandboxOnly() {
    ListedBackend b =
        new ListedBackend(
            List.of(
                container("expired-2", HostProcess.ownerId(), Instant.now().minusSeconds(60)),
                container("live-2", HostProcess.ownerId(), Instant.now().plusSeconds(3600))));

    PruneReport r = Pruner.prune(b, new PruneOptions(false, null, false));

    assertThat(b.removed).containsExactly("expired-2");
    assertThat(r.freedBytes()).isGreaterThanOrEqualTo(10);
  }
}
