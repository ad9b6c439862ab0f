/**
 * The server's side of the audit log: shipping it to the operator's collectors and who may read the
 * server-wide audit routes. Kept out of the faces because it spans every tenant and is the
 * operator's, not a tenant's.
 */
package io.agentnest.server.audit;
