package io.agentnest.escapes.internal;

import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The escape suite's JSON mapper. It reads verdict lines a probe printed inside the sandbox, which
 * are hostile: nesting, string and number lengths are capped as core caps what an agent sends.
 */
public final class ProbeJson {
  public static final ObjectMapper MAPPER = create();

  private ProbeJson() {}

  private static ObjectMapper create() {
    ObjectMapper m = new ObjectMapper();
    m.getFactory()
        .setStreamReadConstraints(
            StreamReadConstraints.builder()
                .maxNestingDepth(64)
                .maxStringLength(1 << 20)
                .maxNumberLength(64)
                .build());
    return m;
  }
}
