/**
 * Small helpers without policy shared by the internal packages: bounded text, the JSON mapper with
 * read limits and daemon threads. Helpers other modules need too are in {@code
 * io.agentnest.spi.support} (home, host process, disk reserve, host files, percentiles) and {@code
 * io.agentnest.text} (text made safe for a person).
 *
 * <p>It must not depend on sandboxes, backends or policy (only on the channel's frame limit, which
 * bounds the JSON reader); everything else may depend on it.
 */
package io.agentnest.internal.support;
