package io.agentnest.escapes;

import java.util.Map;

/**
 * One escape attempt in the catalogue.
 *
 * @param id stable id, {@code category.name}
 * @param attack what the probe tries, in a sentence
 * @param harmlessOn runtimes on which the attack getting through is harmless, with the reason (e.g.
 *     {@code runsc}: gVisor implements io_uring inside its own kernel)
 */
public record Probe(String id, String attack, Map<String, String> harmlessOn) {
  public Probe {
    harmlessOn = Map.copyOf(harmlessOn);
  }

  /** The part of the id before the first dot. */
  public String category() {
    int dot = id.indexOf('.');
    return dot < 0 ? id : id.substring(0, dot);
  }
}
