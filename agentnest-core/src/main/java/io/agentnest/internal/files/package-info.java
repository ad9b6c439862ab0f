/**
 * Files in and out of a sandbox: the {@code SandboxFiles} implementation, artifact export and
 * upload, and the host-side path rules.
 *
 * <p>Every path is checked here before it is sent (and again by the agent); host paths are opened
 * without following links. It must not decide approvals itself (deletion asks through a callback).
 */
package io.agentnest.internal.files;
