/**
 * {@link io.agentnest.Sandbox#git()}: git run inside the sandbox with argument arrays, bounded
 * output and a configuration that runs no program the repository names, names checked host-side
 * ({@link io.agentnest.internal.git.GitNames}); credentials are added by the sandbox's egress proxy
 * for one operation's remote while it runs ({@link
 * io.agentnest.internal.egress.OperationCredentials}), never handed to anything in the sandbox.
 */
package io.agentnest.internal.git;
