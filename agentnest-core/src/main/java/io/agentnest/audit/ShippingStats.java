package io.agentnest.audit;

import org.jspecify.annotations.Nullable;

/**
 * What a {@link ShippingSink} has done since it started.
 *
 * @param target the collector, e.g. {@code syslog+tls://logs.example.org:6514} (no secrets)
 * @param sent records the collector accepted (syslog over TCP/TLS: written to the connection; UDP:
 *     handed to the network)
 * @param dropped records lost for this collector: queue full, collector down, or refused
 * @param gaps synthetic {@code shipping.gap} records sent to tell the collector about drops
 * @param queued records waiting in the queue or being sent now
 * @param connected whether the last attempt to reach the collector worked
 * @param lastError the last failure, for an operator ({@code null} when none)
 */
public record ShippingStats(
    String target,
    long sent,
    long dropped,
    long gaps,
    int queued,
    boolean connected,
    @Nullable String lastError) {}
