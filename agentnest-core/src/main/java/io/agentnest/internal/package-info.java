/**
 * The runtime behind the public API, found through the {@code SandboxRuntime} and {@code
 * AgentProbes} SPIs so the API never imports it. This package holds the sandbox facade ({@code
 * DefaultSandbox}), its launcher and its fork component (one strategy class per {@code ForkPath});
 * each concern the facade delegates to has its own sub-package with a package-info of its own:
 * channel (frames and the multiplexed agent channel), call (executions, sessions, output),
 * approval, files, state (workspace and session state), snapshot, egress, redact, secrets, audit,
 * lifecycle (TTL and reaping), pool, remote (the client of {@code agentnest serve}), support and
 * bench.
 *
 * <p>Nothing here is API: other modules reach it only through the SPI ({@code io.agentnest.spi}),
 * which the per-module ArchUnit boundary tests enforce.
 */
package io.agentnest.internal;
