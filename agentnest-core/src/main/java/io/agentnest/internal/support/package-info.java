/**
 * Small helpers without policy shared by the internal packages: bounded text, sizes, the JSON
 * mapper with read limits, daemon threads, human-readable text, terminal filtering, percentiles and
 * host file helpers.
 *
 * <p>It must not depend on sandboxes, backends or policy (only on the channel's frame limit, which
 * bounds the JSON reader); everything else may depend on it.
 */
package io.agentnest.internal.support;
