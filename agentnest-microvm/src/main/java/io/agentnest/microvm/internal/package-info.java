/**
 * The microVM backend's machinery: guest images on disk ({@link
 * io.agentnest.microvm.internal.GuestImage}), the QEMU command line and its accelerator ({@link
 * io.agentnest.microvm.internal.QemuLauncher}, {@link io.agentnest.microvm.internal.Accelerator}),
 * each running guest's state directory ({@link io.agentnest.microvm.internal.VmDirectory}), the
 * connection to the guest init and, through it, the agent (a {@link
 * io.agentnest.spi.support.SocketConnection}), QEMU's monitor ({@link
 * io.agentnest.microvm.internal.Qmp}) and the doctor's checks.
 *
 * <p>Everything read from a guest is untrusted: lines before the agent starts are bounded, the
 * console tail is bounded by QEMU's ring buffer, and no decision is taken from what a guest says.
 */
@NullMarked
package io.agentnest.microvm.internal;

import org.jspecify.annotations.NullMarked;
