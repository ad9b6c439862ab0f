/**
 * The backend SPI: {@link io.agentnest.spi.RuntimeBackend} and the types it speaks ({@link
 * io.agentnest.spi.SandboxSpec}, {@link io.agentnest.spi.BackendSandbox}, labels, managed
 * resources, health checks), {@link io.agentnest.spi.Backends} to find one by name, and the other
 * services found with {@code ServiceLoader} ({@code Benchmark}, {@code AgentProbes}).
 *
 * <p>Above the API, which it may import; it imports neither the configuration nor the audit (a
 * backend with settings of its own implements {@code io.agentnest.config.ConfigurableBackend}
 * beside {@code RuntimeBackend}) nor {@code internal}.
 */
package io.agentnest.spi;
