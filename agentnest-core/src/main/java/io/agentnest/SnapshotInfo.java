package io.agentnest;

import java.time.Instant;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * A saved sandbox in the snapshot store.
 *
 * <pre>{@code
 * SnapshotInfo s = sandbox.snapshot("trained");
 * try (Sandbox again = Sandbox.restore("trained")) { again.runCode("model.score()"); }
 *
 * // a snapshot of a sandbox with secrets: they are never stored, give them again
 * SandboxConfig c = s.config().toBuilder().secretEnv("API_TOKEN", Secret.of(token)).build();
 * Sandbox.restore("trained", c);
 * }</pre>
 *
 * @param name the snapshot's name
 * @param created when it was saved
 * @param image the image the sandbox ran
 * @param imageId the engine's id of that image when saved; restore refuses a different one
 * @param runtime the OCI runtime, or null for the default
 * @param bytes total size of its parts on disk
 * @param sessions the Python sessions whose state it holds
 * @param memory whether process memory was captured: on gVisor, a checkpoint of the whole sandbox
 *     (every process with its memory, threads and open files, and {@code /tmp}, {@code
 *     /workspace}), stored as parts of kind {@code memory}; never with secret environment variables
 *     (their values are in memory), never on runc (see docs/snapshots.md). Files and sessions are
 *     stored too, so a host that cannot restore the checkpoint restores those
 * @param memoryNote what the memory parts hold, or why memory was not captured
 * @param config the saved configuration, without secret values, approval handler, audit log or
 *     network listeners (code, which restore takes from its config argument)
 */
public record SnapshotInfo(
    String name,
    Instant created,
    String image,
    String imageId,
    @Nullable String runtime,
    long bytes,
    List<String> sessions,
    boolean memory,
    String memoryNote,
    SandboxConfig config) {
  public SnapshotInfo {
    sessions = List.copyOf(sessions);
  }
}
