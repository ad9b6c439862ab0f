/**
 * Secrets: delivery into a sandbox over the channel (never through its environment), the scan that
 * keeps them out of snapshots, and redacted views of what a person or the audit reads.
 *
 * <p>A secret value must never reach a log, an audit record or an exception message from here.
 */
package io.agentnest.internal.secrets;
