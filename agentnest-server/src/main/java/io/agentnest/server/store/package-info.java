/**
 * The shared store in PostgreSQL ({@code store.postgres} in server.yaml): tenants, keys and quota
 * use (behind the interfaces of {@code tenancy}, which also holds the SQLite store of one machine),
 * the approvals queue (behind the board of {@code approvals}) and the console's sessions, which
 * several servers see alike; {@link io.agentnest.server.store.SharedStore} groups them, in memory
 * and SQLite for one server or in PostgreSQL for several. A connection pool, versioned migrations
 * under {@code db/migration/postgresql}, and only prepared statements. Above {@code tenancy},
 * {@code config} and {@code approvals}, below everything that serves a request: the root package
 * picks the store from the configuration.
 */
package io.agentnest.server.store;
