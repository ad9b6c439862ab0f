/**
 * What a tenant may do with sandboxes, decided once for every face ({@code /v1}, E2B, the WebSocket
 * exec, the console): create within policy and quota, extend, exec and code within the executions
 * quota, fork, snapshots and restores, and the one mapping of core's failures to statuses. A face
 * reads its request and writes its answer; a rule changed here holds on every face.
 */
package io.agentnest.server.service;
