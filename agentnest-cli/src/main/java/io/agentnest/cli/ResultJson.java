package io.agentnest.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ExecResult;
import io.agentnest.RichOutput;
import java.util.Base64;

/** The documented JSON form of an {@link ExecResult}. */
final class ResultJson {
  private ResultJson() {}

  static ObjectNode of(ExecResult r) {
    ObjectNode o = CliJson.object();
    o.put("exit_code", r.exitCode());
    o.put("stdout", r.stdout());
    o.put("stderr", r.stderr());
    if (r.result() != null) {
      o.put("result", r.result());
    } else {
      o.putNull("result");
    }
    ArrayNode rich = o.putArray("rich");
    for (RichOutput ro : r.rich()) {
      rich.addObject()
          .put("mime_type", ro.mimeType())
          .put("data_base64", Base64.getEncoder().encodeToString(ro.data()));
    }
    if (r.error() != null) {
      o.putObject("error")
          .put("name", r.error().name())
          .put("value", r.error().value())
          .put("traceback", r.error().traceback());
    } else {
      o.putNull("error");
    }
    o.put("duration_ms", r.duration().toMillis());
    if (r.limit() != null) {
      o.put("limit", r.limit().name());
    } else {
      o.putNull("limit");
    }
    o.put("truncated", r.truncated());
    o.put("state_lost", r.stateLost());
    return o;
  }
}
