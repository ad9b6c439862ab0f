/**
 * Files in and out of a sandbox: the {@code SandboxFiles} implementation, artifact export and
 * upload, and the tar streams of whole trees ({@code SandboxArchives}) that fork and snapshot state
 * ({@code internal.state}) is built on. Nothing here imports the sandbox or its state. The
 * host-side path rules are the API's {@code io.agentnest.WorkspacePaths}.
 *
 * <p>Every path is checked here before it is sent (and again by the agent); host paths are opened
 * without following links. It must not decide approvals itself (deletion asks through a callback).
 */
package io.agentnest.internal.files;
