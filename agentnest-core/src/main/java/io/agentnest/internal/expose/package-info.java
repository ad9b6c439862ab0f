/**
 * Ports inside a sandbox made reachable from the host ({@link io.agentnest.Sandbox#expose}): the
 * loopback listeners on the host, the per-sandbox connection bound, and the pumps between a host
 * socket and its tunnel on the agent channel. It owns the {@code port.*} audit records; the bytes
 * themselves move through {@link io.agentnest.internal.channel.ChannelTunnel}.
 */
package io.agentnest.internal.expose;
