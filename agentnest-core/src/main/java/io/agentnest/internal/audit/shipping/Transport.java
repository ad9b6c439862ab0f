package io.agentnest.internal.audit.shipping;

import java.io.IOException;
import java.util.List;
import org.jspecify.annotations.Nullable;

/** Puts batches on the wire to one collector. Called from the sink's sender thread only. */
interface Transport {
  /**
   * Connects (or checks that the collector can be reached); may be called again after a failure.
   */
  void open() throws IOException;

  /**
   * Sends {@code gap} (when not null) and then the batch, in order.
   *
   * @throws IOException when the collector did not take them: the caller counts them as dropped
   */
  void send(List<Shipment> batch, @Nullable Gap gap) throws IOException;

  /** Drops the connection; safe to call at any time, also from another thread to unblock a send. */
  void close();

  /** Releases everything, once, when the sink stops. */
  default void shutdown() {
    close();
  }
}
