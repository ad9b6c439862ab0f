/**
 * {@link io.agentnest.Sandbox#git()}: git run inside the sandbox with argument arrays and bounded
 * output, names checked host-side ({@link io.agentnest.internal.git.GitNames}), and the askpass
 * grants ({@link io.agentnest.internal.git.AskpassGrants}) through which the host hands a
 * credential to one git operation, for one remote host, a bounded number of times.
 */
package io.agentnest.internal.git;
