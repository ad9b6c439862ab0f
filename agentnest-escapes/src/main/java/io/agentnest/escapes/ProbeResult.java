package io.agentnest.escapes;

import java.time.Duration;

/**
 * One probe's outcome on one backend.
 *
 * @param probe probe id, e.g. {@code kernel.io-uring}
 * @param category the probe's category, e.g. {@code kernel}
 * @param backend the OCI runtime it ran on ({@code runc}, {@code runsc}, ...)
 * @param outcome what happened
 * @param detail what the probe saw (bounded, control characters removed), and for {@link
 *     Outcome#CONTAINED} why that is harmless
 * @param took how long the probe ran
 */
public record ProbeResult(
    String probe, String category, String backend, Outcome outcome, String detail, Duration took) {}
