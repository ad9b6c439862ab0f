/**
 * Tenants, their API keys and key roles in the tenant store: the bottom of the server, because who
 * a request is from is needed everywhere and must not depend on how any route is served. The CLI's
 * {@code agentnest tenant} uses it directly.
 */
package io.agentnest.server.tenancy;
