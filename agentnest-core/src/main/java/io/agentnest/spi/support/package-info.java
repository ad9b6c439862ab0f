/**
 * Small helpers without policy that agentnest-core supports for module authors (backends,
 * front-ends, tools, benchmarks): where host-side state lives ({@link
 * io.agentnest.spi.support.AgentNestHome}), who this host process is ({@link
 * io.agentnest.spi.support.HostProcess}), a free-space reserve for what is written on a sandbox's
 * behalf ({@link io.agentnest.spi.support.DiskGuard}), host file helpers, the one percentile every
 * benchmark reports, daemon thread pools ({@link io.agentnest.spi.support.DaemonThreads}), and the
 * token-checked Unix socket listener of a sandbox's bulk directory ({@link
 * io.agentnest.spi.support.BulkLink}: the fork's bulk link, the Docker backend's agent link), and
 * an agent channel that is one plain socket ({@link io.agentnest.spi.support.SocketConnection}: a
 * microVM guest's port, the agent link).
 *
 * <p>Other modules may use these, like the rest of {@code io.agentnest.spi}; they must not use
 * {@code io.agentnest.internal..} (each module's {@code CoreBoundaryTest} enforces it). This
 * package depends on nothing in agentnest-core but the public API, and on no JSON or backend
 * library ({@code ArchitectureTest}).
 */
package io.agentnest.spi.support;
