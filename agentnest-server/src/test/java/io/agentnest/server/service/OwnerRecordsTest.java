package io.agentnest.server.service;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class OwnerRecordsTest {
  @Test
  void recordsAreWrittenBehindTheCallerInOrderAndCloseWritesWhatIsQueued() throws Exception {
    CountDownLatch storeSlow = new CountDownLatch(1);
    List<String> written = new CopyOnWriteArrayList<>();
    OwnerRecords records =
        new OwnerRecords(
            (tenant, id) -> {
              try {
                storeSlow.await(10, TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              written.add(tenant + "/" + id);
            });
    for (int i = 0; i < 5; i++) {
      records.accept("acme", "sb-" + i); // returns while the store is still stuck
    }
    assertThat(written).isEmpty();
    storeSlow.countDown();
    records.close();
    assertThat(written)
        .containsExactly("acme/sb-0", "acme/sb-1", "acme/sb-2", "acme/sb-3", "acme/sb-4");
  }

  @Test
  void aFailingStoreLosesThatRecordOnlyAndARecordAfterCloseIsWrittenAtOnce() {
    List<String> written = new CopyOnWriteArrayList<>();
    OwnerRecords records =
        new OwnerRecords(
            (tenant, id) -> {
              if (id.equals("bad")) {
                throw new IllegalStateException("database is locked");
              }
              written.add(id);
            });
    records.accept("t", "bad");
    records.accept("t", "good");
    records.close();
    records.accept("t", "late");
    assertThat(written).containsExactly("good", "late");
  }
}
