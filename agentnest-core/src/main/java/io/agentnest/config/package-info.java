/**
 * The configuration file ({@code agentnest.yaml}): {@link io.agentnest.config.AgentNestConfig}
 * (profiles, presets, pools, the {@code kubernetes:} block, errors with file:line:column and a
 * suggestion), its schema, credentials, and the small SPI a backend with settings in the file
 * implements ({@link io.agentnest.config.ConfigurableBackend}).
 *
 * <p>Above the API and the SPI's support (it may import both); it imports neither the audit nor
 * {@code internal}.
 */
package io.agentnest.config;
