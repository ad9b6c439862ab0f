/**
 * The server's metrics in Prometheus' text format ({@code GET /metrics}): one Micrometer registry
 * that the root package feeds (requests, egress, approvals) and reads on each scrape (sandboxes,
 * approvals waiting, audit shipping). It imports no other package of the server: what it counts is
 * handed to it as plain values and callbacks. Nothing a sandbox controls becomes a label: labels
 * are route templates, methods, statuses, error codes, tenant names (checked when the tenant is
 * added) and the operator's collector targets.
 */
package io.agentnest.server.metrics;
