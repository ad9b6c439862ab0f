/**
 * The shared store in PostgreSQL ({@code store.postgres} in server.yaml): tenants, keys and quota
 * use that several servers see alike, behind the interfaces of {@code tenancy} (which also holds
 * the SQLite store of one machine). A connection pool, versioned migrations under {@code
 * db/migration/postgresql}, and only prepared statements. Above {@code tenancy} and {@code config},
 * below everything that serves a request: the root package picks the store from the configuration.
 */
package io.agentnest.server.store;
