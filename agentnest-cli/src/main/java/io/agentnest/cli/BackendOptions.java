package io.agentnest.cli;

import io.agentnest.ConfigException;
import io.agentnest.config.AgentNestConfig;
import io.agentnest.config.ConfigurableBackend;
import io.agentnest.spi.Backends;
import io.agentnest.spi.RuntimeBackend;
import java.nio.file.Path;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Option;

/**
 * Which backend a command works on and which configuration file it reads: {@code --backend}, else
 * {@code $AGENTNEST_BACKEND}, else the file's {@code backend:} (of {@code --profile}), else docker.
 * The backend takes its own settings (e.g. the {@code kubernetes:} block) from the same file.
 */
final class BackendOptions {
  @Option(
      names = "--backend",
      paramLabel = "NAME",
      description =
          "Backend: docker, kubernetes or microvm (default: $AGENTNEST_BACKEND, else the configuration's"
              + " 'backend:', else docker).")
  @Nullable String backend;

  @Option(
      names = "--config",
      paramLabel = "FILE",
      description =
          "Configuration file (default: $AGENTNEST_CONFIG, ./agentnest.yaml, then"
              + " ~/.config/agentnest/agentnest.yaml; none: built-in defaults).")
  @Nullable Path config;

  @Option(
      names = "--profile",
      paramLabel = "NAME",
      description = "Profile of the configuration file (default: $AGENTNEST_PROFILE, else none).")
  @Nullable String profile;

  private @Nullable AgentNestConfig loaded;

  /** The configuration file (and its environment overrides), loaded once. */
  AgentNestConfig file() {
    AgentNestConfig c = loaded;
    if (c == null) {
      c = config != null ? AgentNestConfig.load(config) : AgentNestConfig.load();
      loaded = c;
    }
    return c;
  }

  /** The backend's name: the flag, else the environment or the file; one that is installed. */
  String name() {
    String name;
    if (backend != null) {
      name = backend.strip();
    } else {
      name = file().sandboxConfig(profile).backend();
    }
    Set<String> known = Backends.available().keySet();
    if (!known.contains(name)) {
      throw new ConfigException(
          (backend != null ? "--backend" : "backend")
              + " '"
              + name
              + "' is not available: use one of "
              + String.join(", ", known));
    }
    return name;
  }

  /** The backend, with its settings from the configuration file. */
  RuntimeBackend open() {
    return open(name());
  }

  /** Backend {@code name}, with its settings from the configuration file. */
  RuntimeBackend open(String name) {
    RuntimeBackend b = Backends.get(name);
    if (b instanceof ConfigurableBackend c) {
      c.configure(file(), profile);
    }
    return b;
  }
}
