/**
 * A sandbox's life on the host: the security policy that turns a config into a {@code SandboxSpec},
 * the backend registry, the expiry reaper, the host state of detached sandboxes and prune (behind
 * {@code Sandbox.prune}).
 *
 * <p>Expiry is decided by the host clock and labels the host wrote, never by what the agent says.
 * It must not run calls in a sandbox.
 */
package io.agentnest.internal.lifecycle;
