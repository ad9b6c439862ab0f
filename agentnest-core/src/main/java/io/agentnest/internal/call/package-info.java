/**
 * One call into a sandbox and its outcome: the {@code Execution} handle, Python sessions, output
 * collection with the host-side cap, rich outputs and the audit of a finished exec.
 *
 * <p>It trusts nothing a result header says about limits or sizes (the host counts); it must not
 * open channels, create sandboxes or decide approvals.
 */
package io.agentnest.internal.call;
