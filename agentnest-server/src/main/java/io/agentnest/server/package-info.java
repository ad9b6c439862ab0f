/**
 * {@code agentnest serve} as other modules start it: {@link io.agentnest.server.AgentNestServer}
 * wires the packages below into one Jetty server and is the only class that knows them all, so the
 * front door (listening, connection bounds, authentication, rate limits) stays with it and nothing
 * below imports it back.
 */
package io.agentnest.server;
