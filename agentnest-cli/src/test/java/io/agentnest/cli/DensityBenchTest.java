package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The host figures of {@code bench --only density}: how /proc fields are read. */
class DensityBenchTest {
  @TempDir Path dir;

  @Test
  void procFieldsInKilobytesComeBackInBytesAndCountsAsTheyAre() throws IOException {
    Path status = dir.resolve("status");
    Files.writeString(
        status, "Name:\tjava\nVmRSS:\t  215040 kB\nThreads:\t32\nVmSwap:\t       0 kB\n");
    assertThat(DensityBench.procField(status, "VmRSS:")).hasValue(215040L * 1024);
    assertThat(DensityBench.procField(status, "Threads:")).hasValue(32);
    assertThat(DensityBench.procField(status, "Missing:")).isEmpty();
  }

  @Test
  void anUnreadableOrMalformedFileGivesNothingRatherThanFailingTheRun() throws IOException {
    assertThat(DensityBench.procField(dir.resolve("absent"), "VmRSS:")).isEmpty();
    Path bad = dir.resolve("bad");
    Files.writeString(bad, "VmRSS:\tlots kB\n");
    assertThat(DensityBench.procField(bad, "VmRSS:")).isEmpty();
  }

  @Test
  void thisHostHasItsOwnFigures() {
    DensityBench.Host h = DensityBench.Host.measure();
    assertThat(h.rss()).isPositive();
    assertThat(h.threads()).isPositive();
    assertThat(h.heap()).isPositive();
  }

  @Test
  void threadsAreGroupedByKindWithoutTheirNumbers() throws InterruptedException {
    CountDownLatch stop = new CountDownLatch(1);
    List<Thread> workers = new ArrayList<>();
    for (int i = 17; i < 19; i++) {
      Thread t =
          new Thread(
              () -> {
                try {
                  stop.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              },
              "density-test-worker-" + i);
      t.setDaemon(true);
      t.start();
      workers.add(t);
    }
    try {
      assertThat(DensityBench.threadGroups()).contains("density-test-worker=2", "main=1");
    } finally {
      stop.countDown();
      for (Thread t : workers) {
        t.join(5000);
      }
    }
  }
}
