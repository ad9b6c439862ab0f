package io.agentnest.spi;

/**
 * The runtime seam under its old name.
 *
 * @deprecated moved to {@link io.agentnest.SandboxRuntime}, the API's own seam (the API may not
 *     import the SPI); implement that and register it under {@code
 *     META-INF/services/io.agentnest.SandboxRuntime}. This name goes in the next release.
 */
@Deprecated(forRemoval = true)
public interface SandboxRuntime extends io.agentnest.SandboxRuntime {}
