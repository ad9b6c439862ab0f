/**
 * The {@code /v1} API of docs/openapi.yaml: its routes, server-sent events and the WebSocket exec
 * read requests and write answers over the service, and nothing here is used by another face, so
 * the API can change its shapes without touching E2B or the console.
 */
package io.agentnest.server.v1;
