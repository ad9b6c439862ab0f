/**
 * What a sandbox's parts are handed instead of the sandbox facade: {@code SandboxContext} (its id,
 * configuration, channel, redactor, audit and public face), {@code SandboxStarts} (the launcher's
 * start paths: create, adopt a restored copy, hand out a pooled member) and {@code FailedStart}
 * (the clean-up every start path shares).
 *
 * <p>It sits below the parts (state, snapshot, git, pool) and above channel, files and egress, and
 * imports nothing of {@code io.agentnest.internal} itself: the facade and its launcher implement
 * these interfaces, so the parts never import the package that imports them.
 */
package io.agentnest.internal.context;
