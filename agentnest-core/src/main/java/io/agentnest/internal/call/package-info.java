/**
 * One call into a sandbox and its outcome: the call engine (approval before a command starts, the
 * timeout and output cap of the request, the host's deadline with its answer margin, cancel and the
 * {@code exec.*} audit), the {@code Execution} handle, Python sessions, output collection with the
 * host-side cap, rich outputs and the audit of a finished exec.
 *
 * <p>It trusts nothing a result header says about limits or sizes (the host counts); it must not
 * open channels or create sandboxes, and it asks the approval gate rather than decide itself.
 */
package io.agentnest.internal.call;
