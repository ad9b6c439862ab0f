package io.agentnest.escapes.internal;

import io.agentnest.escapes.internal.Catalogue.Entry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/** Collects probes in the order they are added; each category adds its own. */
final class ProbeList {
  private static final String GVISOR = "runsc";

  private final List<Entry> entries = new ArrayList<>();

  /** A probe whose body the host runs and judges. */
  void add(
      String id,
      String attack,
      Map<String, String> harmless,
      Function<ProbeContext, Judgement> body) {
    entries.add(new Entry(id, attack, harmless, body));
  }

  /** A probe that is a script of the in-sandbox probe program, named by its id. */
  void script(String id, String attack) {
    script(id, attack, Map.of());
  }

  void script(String id, String attack, Map<String, String> harmless) {
    add(id, attack, harmless, ctx -> ctx.script(id, Map.of()));
  }

  /** Getting through is harmless on gVisor, for the reason given. */
  static Map<String, String> onGvisor(String why) {
    return Map.of(GVISOR, why);
  }

  List<Entry> entries() {
    return List.copyOf(entries);
  }
}
