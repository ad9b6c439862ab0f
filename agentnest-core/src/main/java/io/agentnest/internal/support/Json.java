package io.agentnest.internal.support;

import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** The shared Jackson mapper, with read limits suited to untrusted input. */
public final class Json {
  /**
   * The longest string any untrusted JSON may hold: a channel frame's whole header (the channel's
   * {@code FrameCodec.MAX_HEADER} is this), so no string that fits in a frame is refused.
   */
  public static final int MAX_STRING_LENGTH = 1 << 20;

  public static final ObjectMapper MAPPER = create();

  private Json() {}

  private static ObjectMapper create() {
    ObjectMapper m = new ObjectMapper();
    m.getFactory()
        .setStreamReadConstraints(
            StreamReadConstraints.builder()
                .maxNestingDepth(64)
                .maxStringLength(MAX_STRING_LENGTH)
                .maxNumberLength(64)
                .build());
    return m;
  }

  public static ObjectNode object() {
    return MAPPER.createObjectNode();
  }
}
