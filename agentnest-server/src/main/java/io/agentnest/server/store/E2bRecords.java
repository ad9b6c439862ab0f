package io.agentnest.server.store;

import java.time.Instant;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * What the E2B face keeps of a running sandbox beyond the server's memory, so that a restarted
 * server (which adopts the sandbox) hands its clients the access tokens they already hold, with the
 * template and metadata they asked for. One server alone keeps nothing here ({@link #NONE}).
 */
public interface E2bRecords {
  /** Nothing kept: the E2B face's memory is all there is. */
  E2bRecords NONE =
      new E2bRecords() {
        @Override
        public void save(Record r) {}

        @Override
        public @Nullable Record load(String id) {
          return null;
        }

        @Override
        public void remove(String id) {}
      };

  /**
   * One sandbox's E2B state.
   *
   * @param id the id the E2B client knows
   * @param sandboxId the registry's id of the running sandbox (a resumed one is a restored copy)
   * @param keys the ids of the API keys the tokens were handed to
   */
  record Record(
      String id,
      String tenant,
      String templateId,
      Map<String, String> metadata,
      Instant started,
      String sandboxId,
      String envdToken,
      String trafficToken,
      Set<String> keys) {
    public Record {
      metadata = Map.copyOf(metadata);
      keys = Set.copyOf(keys);
    }
  }

  /** Keeps {@code r}, replacing what was kept under its id. */
  void save(Record r);

  /** What is kept under {@code id}, or null. */
  @Nullable Record load(String id);

  /** Forgets {@code id} (idempotent). */
  void remove(String id);
}
