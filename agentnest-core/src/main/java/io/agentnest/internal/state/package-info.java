/**
 * A sandbox's state as fork and snapshot both capture it: the files of /workspace and /tmp and the
 * pickled namespaces of its Python sessions, read from the agent within a budget ({@link
 * io.agentnest.internal.state.StateBudget}), spilled to disk or relayed sandbox to sandbox, and
 * loaded into another sandbox. What comes out of a sandbox here is untrusted: sizes, names and
 * counts are bounded before anything is kept.
 */
package io.agentnest.internal.state;
