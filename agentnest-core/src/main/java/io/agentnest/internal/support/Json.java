package io.agentnest.internal.support;

import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.internal.channel.FrameCodec;

/** The shared Jackson mapper, with read limits suited to untrusted input. */
public final class Json {
  public static final ObjectMapper MAPPER = create();

  private Json() {}

  private static ObjectMapper create() {
    ObjectMapper m = new ObjectMapper();
    m.getFactory()
        .setStreamReadConstraints(
            StreamReadConstraints.builder()
                .maxNestingDepth(64)
                .maxStringLength(FrameCodec.MAX_HEADER)
                .maxNumberLength(64)
                .build());
    return m;
  }

  public static ObjectNode object() {
    return MAPPER.createObjectNode();
  }
}
