package io.agentnest.cli;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The mapper of the commands' {@code --json} output. It only writes what the CLI builds; JSON that
 * a sandbox controls is parsed by core, with its read limits, never here.
 */
final class CliJson {
  static final ObjectMapper MAPPER = new ObjectMapper();

  private CliJson() {}

  static ObjectNode object() {
    return MAPPER.createObjectNode();
  }
}
