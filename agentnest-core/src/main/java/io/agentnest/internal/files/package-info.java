/**
 * Files in and out of a sandbox: the {@code SandboxFiles} implementation and artifact export and
 * upload. The host-side path rules are the API's {@code io.agentnest.WorkspacePaths}.
 *
 * <p>Every path is checked here before it is sent (and again by the agent); host paths are opened
 * without following links. It must not decide approvals itself (deletion asks through a callback).
 */
package io.agentnest.internal.files;
