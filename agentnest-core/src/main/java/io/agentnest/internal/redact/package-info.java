/**
 * Secret redaction of everything a sandbox sends back (output, errors, rich results, file reads
 * that are echoed): {@code Redactor} compiles secret values with their encodings and well-known
 * credential shapes into one Aho-Corasick {@code Automaton} over bytes; {@code RedactingStream}
 * masks a stream chunk by chunk without missing a secret split across chunks, and {@code
 * TwoStreamRedactor} masks one printed partly to stdout and partly to stderr.
 */
package io.agentnest.internal.redact;
