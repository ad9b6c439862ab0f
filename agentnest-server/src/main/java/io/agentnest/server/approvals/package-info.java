/**
 * The queue of questions a sandbox asks a person and who may answer them: kept apart from the faces
 * because the {@code /v1} routes, the console and the service that applies the floor all reach the
 * same queue.
 */
package io.agentnest.server.approvals;
