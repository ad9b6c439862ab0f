/**
 * A sandbox's life on the host: the security policy that turns a config into a {@code SandboxSpec},
 * the backend registry, each sandbox's expiry ({@code SandboxExpiry}: told to the agent, written to
 * the host state, scheduled with the expiry reaper), the host state of detached sandboxes and prune
 * (behind {@code Sandbox.prune}).
 *
 * <p>Expiry is decided by the host clock and labels the host wrote, never by what the agent says.
 * It must not run calls (commands, code) in a sandbox: the one request it sends is {@code set_ttl}.
 */
package io.agentnest.internal.lifecycle;
