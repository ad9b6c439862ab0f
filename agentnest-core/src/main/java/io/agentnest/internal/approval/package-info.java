/**
 * Human approval and the rules that ask for it: the gate that waits for an {@code ApprovalHandler},
 * the shell classifier (lexer, wrappers, write targets) and the Python audit-hook questions.
 *
 * <p>A decision is taken from what the host parsed, never from a value the sandbox reported; a
 * timeout denies. This package must not talk to the backend or write the audit log directly (it
 * reports through callbacks).
 */
package io.agentnest.internal.approval;
