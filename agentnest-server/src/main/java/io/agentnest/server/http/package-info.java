/**
 * What every face needs to speak HTTP the same way: refusals and their codes, the JSON shapes, the
 * request's tenant, bounded bodies, the memory budget, bounded stream threads and file transfers.
 * It holds no decision about sandboxes, so the faces can share it without sharing each other.
 */
package io.agentnest.server.http;
