/**
 * The contract every {@link io.agentnest.spi.RuntimeBackend} passes (the TCK): JUnit 5 test
 * interfaces, one per area (lifecycle, exec, sessions, files, limits, streaming, fork, snapshots,
 * labels and cleanup, fail-closed refusal), gathered in {@link io.agentnest.tck.BackendContract}. A
 * backend's test class implements {@code BackendContract} and says, in {@link
 * io.agentnest.tck.BackendUnderTest}, which backend and runtime it is and what it can do; a new
 * backend is done when that class passes. Tests use the public API and the SPI only.
 */
@NullMarked
package io.agentnest.tck;

import org.jspecify.annotations.NullMarked;
