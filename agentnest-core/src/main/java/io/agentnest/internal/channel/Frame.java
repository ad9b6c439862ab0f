package io.agentnest.internal.channel;

import com.fasterxml.jackson.databind.node.ObjectNode;

/** One protocol frame: a JSON header and a binary payload. */
public record Frame(ObjectNode header, byte[] payload) {
  public String ev() {
    return header.path(Ops.EV).asText("");
  }

  public long id() {
    return header.path("id").asLong(-1);
  }
}
