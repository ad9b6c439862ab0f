package io.agentnest.server.service;

import io.agentnest.spi.support.DaemonThreads;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes which tenant each sandbox is to the store behind the request that made it. The write is a
 * database commit (a few milliseconds with its syncs) that a create, and the registry's lock, would
 * otherwise wait for; one writer keeps the records in order. While a record is on its way the
 * sandbox is in the registry, which is what the tenant-wide audit query reads beside the store.
 */
public final class OwnerRecords implements BiConsumer<String, String>, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(OwnerRecords.class);

  private final BiConsumer<String, String> store;
  private final ExecutorService writer = DaemonThreads.scheduler("agentnest-owner-records");

  public OwnerRecords(BiConsumer<String, String> store) {
    this.store = store;
  }

  @Override
  public void accept(String tenant, String id) {
    try {
      writer.execute(() -> write(tenant, id));
    } catch (RejectedExecutionException closed) {
      write(tenant, id); // after close (a sandbox adopted while the server stops): write it now
    }
  }

  private void write(String tenant, String id) {
    try {
      store.accept(tenant, id);
    } catch (RuntimeException e) {
      LOG.warn(
          "could not record that sandbox {} is tenant {}'s: {}; its audit trail stays readable"
              + " through GET /v1/sandboxes/{}/audit while it lives",
          id,
          tenant,
          e.getMessage(),
          id);
    }
  }

  /** Writes what is queued (bounded) before the store closes. */
  @Override
  public void close() {
    writer.shutdown();
    try {
      if (!writer.awaitTermination(10, TimeUnit.SECONDS)) {
        LOG.warn("sandbox owner records still unwritten after 10 s; the store closes without them");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
