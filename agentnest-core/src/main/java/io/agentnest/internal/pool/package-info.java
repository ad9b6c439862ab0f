/**
 * Warm sandbox pools ({@code SandboxPool}), once for every backend: {@code WarmPool} is the
 * accounting (idle, starting, in use; exhaustion; refill; idle TTL) over a {@code Members} source,
 * {@code BackendMembers} starts members through the {@code RuntimeBackend} SPI and hands them out
 * through the launcher, {@code PoolKey} decides which configurations a pool serves and {@code
 * PoolRegistry} lets {@code Sandbox.create} find a running pool.
 *
 * <p>A member waits with its agent started but before the agent has read its first frame, so no
 * code, interpreter or file of anyone exists in it; everything of its user (secrets, environment,
 * TTL, owner) is applied at hand-out. A member is handed out once; its user's close destroys it.
 */
package io.agentnest.internal.pool;
