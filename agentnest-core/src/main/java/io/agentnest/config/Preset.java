package io.agentnest.config;

import io.agentnest.SandboxConfig;
import java.util.List;
import java.util.Map;

/**
 * A ready environment: a configuration profile (its {@code profile.yaml}, an AgentNest config file
 * whose {@code defaults:} the preset's sandboxes start from) and the recipe of its image (Debian
 * packages added to the base image's, built offline by {@code agentnest image build --preset}).
 *
 * @param name the preset's name, e.g. {@code data}
 * @param source where it was read from (a resource of AgentNest, or a directory of the user's)
 * @param profileYaml the profile's text
 * @param packages Debian packages of its image, beyond the base image's
 */
public record Preset(String name, String source, String profileYaml, List<String> packages) {
  public Preset {
    packages = List.copyOf(packages);
  }

  /** The preset's settings, validated as a config file's are (errors name the preset's file). */
  public SandboxConfig sandboxConfig() {
    return AgentNestConfig.parse(profileYaml, source, Map.of()).sandboxConfig(null);
  }

  /** The image its sandboxes run, which {@code agentnest image build --preset} builds. */
  public String image() {
    return sandboxConfig().image();
  }
}
