package io.agentnest.docker;

import io.agentnest.config.Preset;
import io.agentnest.config.Presets;
import java.util.List;

/** A preset's image for the tests: built once (offline, from Debian), reused while present. */
final class PresetImages {
  private PresetImages() {}

  static synchronized Preset ensure(String name) {
    Preset p = Presets.get(name);
    if (!BaseImageBuilder.exists(p.image())) {
      System.err.println("building " + p.image() + " (preset " + name + ") for the tests...");
      BaseImageBuilder.buildPreset(p, List.of(), "bookworm", n -> {});
    }
    return p;
  }
}
