package io.agentnest.config;

import org.jspecify.annotations.Nullable;

/**
 * A backend with settings of its own in the configuration file (e.g. the {@code kubernetes:}
 * block): the configuration's small SPI, which a {@code RuntimeBackend} implements beside that one.
 * It lives here, not in the backend SPI, so that the SPI never imports the configuration, which
 * sits above it.
 */
public interface ConfigurableBackend {
  /**
   * Takes this backend's own settings from {@code config}, the defaults overlaid with {@code
   * profile}, instead of the file discovery finds; called before the backend's first use (the CLI's
   * {@code --config} and {@code --profile}). Environment variables still override the file.
   */
  void configure(AgentNestConfig config, @Nullable String profile);
}
