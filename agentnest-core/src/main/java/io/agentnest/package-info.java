/**
 * The public API: {@link io.agentnest.Sandbox} and its values (configuration, policies, results,
 * events, typed failures), {@link io.agentnest.SandboxPool}, {@link io.agentnest.Sizes}, and the
 * seam its static factories call ({@link io.agentnest.SandboxRuntime}, found with {@code
 * ServiceLoader}).
 *
 * <p>The bottom floor of core: it imports nothing of agentnest-core's other packages (not the SPI,
 * the configuration, the audit or {@code internal}). What it needs from above is behind its own
 * types: the runtime behind {@code SandboxRuntime}, presets through it, the audit log behind {@link
 * io.agentnest.AuditTrail}. {@code PackageCyclesTest} and {@code ArchitectureTest} hold this.
 */
package io.agentnest;
