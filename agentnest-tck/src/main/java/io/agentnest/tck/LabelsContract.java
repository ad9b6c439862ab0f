package io.agentnest.tck;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.Sandbox;
import io.agentnest.spi.Labels;
import io.agentnest.spi.ManagedResource;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Every sandbox carries the labels that let any process find and reap it; the backend lists it
 * among its resources until it is destroyed.
 */
public interface LabelsContract extends BackendTarget {

  @Test
  default void aSandboxCarriesOwnerCreationExpiryAndTheUsersLabels() {
    try (Sandbox sb = Sandbox.create(target().configure().label("team", "contract").build())) {
      Map<String, String> labels = target().backend().inspect(sb.id()).orElseThrow().labels();
      assertThat(labels)
          .containsEntry(Labels.MANAGED, "true")
          .containsEntry("team", "contract")
          .containsKeys(Labels.OWNER, Labels.CREATED, Labels.EXPIRES);
      Instant expires = Instant.ofEpochSecond(Long.parseLong(labels.get(Labels.EXPIRES)));
      assertThat(expires).isAfter(Instant.now());
    }
  }

  @Test
  default void resourcesListTheSandboxUntilItIsDestroyed() {
    Sandbox sb = Sandbox.create(target().configure().build());
    try {
      assertThat(target().backend().resources()).extracting(ManagedResource::id).contains(sb.id());
    } finally {
      sb.destroy();
    }
    assertThat(target().backend().resources())
        .extracting(ManagedResource::id)
        .doesNotContain(sb.id());
  }
}
