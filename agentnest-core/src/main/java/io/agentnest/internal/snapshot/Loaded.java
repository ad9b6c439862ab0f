package io.agentnest.internal.snapshot;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.ForkReport;
import io.agentnest.internal.state.SandboxState;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;

/** A verified manifest and the directory of its parts. */
record Loaded(JsonNode manifest, Path dir) {
  /** The part of {@code kind} (workspace, tmp), or null. */
  @Nullable JsonNode part(String kind) {
    for (JsonNode p : manifest.path("parts")) {
      if (p.path("kind").asText().equals(kind)) {
        return p;
      }
    }
    return null;
  }

  /** All parts read into memory, each verified (tests and small snapshots). */
  SandboxState.Captured state() {
    byte[] ws = new byte[0];
    byte[] tmp = new byte[0];
    List<SandboxState.Session> sessions = new ArrayList<>();
    for (JsonNode p : manifest.path("parts")) {
      if (p.path("kind").asText().equals("memory")) {
        continue; // a checkpoint image: only the runtime reads it
      }
      byte[] data = Parts.readPart(dir, p);
      switch (p.path("kind").asText()) {
        case "workspace" -> ws = data;
        case "tmp" -> tmp = data;
        default -> {
          JsonNode meta = p.path("meta");
          List<String> vars = new ArrayList<>();
          meta.path("variables").forEach(v -> vars.add(v.asText()));
          List<ForkReport.Skipped> skipped = new ArrayList<>();
          meta.path("skipped")
              .forEach(
                  x ->
                      skipped.add(
                          new ForkReport.Skipped(
                              x.path("session").asText(),
                              x.path("name").asText(),
                              x.path("type").asText(),
                              x.path("reason").asText())));
          sessions.add(
              new SandboxState.Session(
                  meta.path("session").asText(),
                  data,
                  meta.path("extra_bytes").asLong(),
                  vars,
                  skipped));
        }
      }
    }
    return new SandboxState.Captured(ws, tmp, sessions);
  }
}
