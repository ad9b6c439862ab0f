package io.agentnest;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * What {@link Sandbox#fork()} carried into a copy, and how.
 *
 * <pre>{@code
 * Sandbox copy = sandbox.fork();
 * ForkReport r = copy.forkReport().orElseThrow();
 * if (!r.skipped().isEmpty()) log.warn("not carried: {}", r.skipped());
 * }</pre>
 *
 * @param parentId the sandbox this one was copied from
 * @param mode how the state was carried
 * @param sessions per Python session, the names of the variables carried
 * @param skipped what could not be carried (e.g. a generator, a thread, a socket)
 * @param fileBytes bytes of workspace and scratch files copied
 * @param stateBytes bytes of session state copied
 * @param duration how long the fork took, from the call to the copy being ready
 */
public record ForkReport(
    String parentId,
    Mode mode,
    Map<String, List<String>> sessions,
    List<Skipped> skipped,
    long fileBytes,
    long stateBytes,
    Duration duration) {
  /** How a fork (or snapshot) carries the running state. */
  public enum Mode {
    /**
     * The runtime checkpointed the sandbox's processes (gVisor): memory, open files, threads and
     * generators are all there in the copy.
     */
    CHECKPOINT,
    /**
     * Files are copied and each Python session's namespace is pickled (dill) and loaded in a fresh
     * interpreter: variables, imports, functions and classes defined in the session. Processes,
     * threads, open sockets and other unpicklable objects are not carried (see {@link
     * ForkReport#skipped()}).
     */
    STATE_TRANSFER
  }

  /** Something that was not carried. */
  public record Skipped(String session, String name, String type, String reason) {}

  public ForkReport {
    Objects.requireNonNull(parentId, "parentId");
    Objects.requireNonNull(mode, "mode");
    sessions = Map.copyOf(sessions);
    skipped = List.copyOf(skipped);
    Objects.requireNonNull(duration, "duration");
  }
}
