package io.agentnest;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * An isolated sandbox: run Python in persistent sessions, shell commands, and work with files, all
 * inside a hardened container with no network.
 *
 * <pre>{@code
 * try (Sandbox sandbox = Sandbox.create()) {
 *   sandbox.runCode("a = 10; print(a * 2)").output();   // "20\n"
 *   sandbox.runCode("a + 1").result();                   // "11"
 *   sandbox.exec("ls -la /workspace").exitCode();        // 0
 *   sandbox.files().write("data/in.csv", bytes);
 * }
 * }</pre>
 *
 * <p>{@link #close()} destroys the sandbox; it is idempotent.
 */
public interface Sandbox extends AutoCloseable {

  /** Creates a sandbox with {@link SandboxConfig#defaults()}. */
  static Sandbox create() {
    return create(SandboxConfig.defaults());
  }

  /** Creates a sandbox; throws when the backend cannot enforce the configuration. */
  static Sandbox create(SandboxConfig config) {
    return SandboxRuntimes.get().create(config);
  }

  /** Reattaches to a running managed sandbox of the default backend by id (or unique prefix). */
  static Sandbox connect(String id) {
    return SandboxRuntimes.get().connect(id);
  }

  /**
   * Reattaches to a running managed sandbox with the approval rules and handler given here: a
   * handle made by {@link #connect(String)} has neither (they are not carried in the sandbox's
   * labels), so a server that re-adopts its sandboxes after a restart applies its approvals floor
   * and its queue this way, or its sandboxes would delete and modify without asking.
   */
  static Sandbox connect(String id, ApprovalPolicy approvals, @Nullable ApprovalHandler handler) {
    return SandboxRuntimes.get().connect(id, approvals, handler);
  }

  /** Managed sandboxes of the default backend. */
  static List<SandboxInfo> list() {
    return SandboxRuntimes.get().list();
  }

  /**
   * Whether this process destroys the sandboxes it still owns (made or connected here, neither
   * destroyed nor detached) and closes its pools when it exits, by a normal end, {@code
   * System.exit}, SIGTERM or SIGINT. On by default; a server whose successor adopts its sandboxes
   * turns it off. Only SIGKILL leaves sandboxes to their owner-pid label and {@link #prune}.
   */
  static void destroyOnExit(boolean on) {
    SandboxRuntimes.get().destroyOnExit(on);
  }

  /**
   * Removes what AgentNest left behind on {@code backend} (e.g. {@code docker}): sandboxes past
   * their TTL, sandboxes whose owner process is gone, stopped ones, their networks and volumes,
   * host-side state of sandboxes that no longer exist and unfinished snapshot saves. A failure to
   * remove one resource is reported in its {@link PruneReport.Item#error()}, not thrown.
   *
   * <pre>{@code
   * PruneReport r = Sandbox.prune("docker", new PruneOptions(false, Duration.ofHours(2), true));
   * }</pre>
   */
  static PruneReport prune(String backend, PruneOptions options) {
    return SandboxRuntimes.get().prune(backend, options);
  }

  /** Sandbox id (the backend's id). */
  String id();

  /** Runs Python code in the default session; variables persist across calls. */
  ExecResult runCode(String code);

  /** Runs Python code in the default session with per-call options. */
  ExecResult runCode(String code, ExecOptions options);

  /** A named, independent Python session (created on first use). */
  PythonSession pythonSession(String name);

  /** Runs a shell command ({@code /bin/sh -c}) in the workspace. */
  ExecResult exec(String command);

  /** Runs a shell command with per-call options. */
  ExecResult exec(String command, ExecOptions options);

  /** Runs a program with explicit arguments, no shell involved. */
  ExecResult exec(List<String> argv, ExecOptions options);

  /**
   * Starts a shell command whose output streams as {@link ExecEvent}s (consume as a {@code
   * Flow.Publisher} or by iterating).
   */
  Execution start(String command, ExecOptions options);

  /** Starts a program with explicit arguments, streaming. */
  Execution start(List<String> argv, ExecOptions options);

  /**
   * Starts {@code argv} on a pseudo-terminal of {@code rows} by {@code cols} (1..1000), for a
   * person at a terminal (see {@link TerminalSession}); {@code TERM} from {@code options}'
   * environment (xterm-256color when not given or not a known one).
   *
   * @throws UnsupportedControlException where the sandbox's client cannot carry a terminal
   */
  default TerminalSession terminal(List<String> argv, int rows, int cols, ExecOptions options) {
    throw new UnsupportedControlException(
        "this sandbox ("
            + getClass().getSimpleName()
            + ") cannot run a terminal: attach on this host (unset AGENTNEST_URL) or use exec");
  }

  /** Starts Python code in the default session, streaming. */
  Execution startCode(String code, ExecOptions options);

  /** Async shell command; cancelling the future stops the command in the sandbox. */
  CompletableFuture<ExecResult> execAsync(String command, ExecOptions options);

  /** Async Python call in the default session; cancelling interrupts it. */
  CompletableFuture<ExecResult> runCodeAsync(String code, ExecOptions options);

  /**
   * An independent copy of this sandbox: its files and the state of its Python sessions. Later
   * writes, variables and processes of one are never seen by the other. {@link #forkReport()} of
   * the copy says how the state was carried and what could not be.
   *
   * <pre>{@code
   * sandbox.runCode("model = train()");
   * try (Sandbox a = sandbox.fork()) {
   *   a.runCode("model.tune(lr=0.1)");   // the parent's model is untouched
   * }
   * }</pre>
   */
  Sandbox fork();

  /** {@code n} independent copies at once; the parent's state is captured once for all. */
  List<Sandbox> fork(int n);

  /**
   * Keeps {@code n} started copies (spares) ready, so that a later {@code fork(k)} with {@code k <=
   * n} does not wait for containers to start; after each fork the spares are made again in the
   * background. {@code 0} stops it. Spares cost an idle container each and go with this sandbox
   * when it is destroyed. On gVisor, where fork restores a checkpoint, spares are not used.
   *
   * <pre>{@code
   * sandbox.prepareForks(4);
   * List<Sandbox> tries = sandbox.fork(4);   // no container start on the way
   * }</pre>
   */
  void prepareForks(int n);

  /** How this sandbox was forked, if it is a fork. */
  Optional<ForkReport> forkReport();

  /**
   * Regular files under the workspace whose relative path matches {@code glob} ({@link
   * java.nio.file.FileSystem#getPathMatcher} glob syntax: {@code output/**.png}, {@code *.csv}),
   * each with its size and sha256 computed on the host. Symlinks are refused, not followed.
   */
  List<Artifact> artifacts(String glob);

  /**
   * Copies the files {@link #artifacts} lists into {@code hostDir}, keeping their relative paths.
   * The archive is checked entry by entry on the host (no absolute names, no {@code ..}, only
   * regular files and directories, no names that collide after Unicode normalisation, size and
   * count caps) and written to a temporary directory first: a refused export leaves nothing.
   *
   * <pre>{@code
   * sandbox.runCode("import matplotlib; ...; plt.savefig('output/plot.png')");
   * List<Artifact> saved = sandbox.exportArtifacts("output/*.png", Path.of("out"));
   * }</pre>
   */
  List<Artifact> exportArtifacts(String glob, Path hostDir);

  /**
   * Copies a host file or directory (recursively) to {@code sandboxPath} in the workspace. Refuses
   * symlinks that point outside the uploaded tree, special files and more than the size cap.
   *
   * <pre>{@code
   * sandbox.upload(Path.of("data"), "input");   // data/a.csv -> /workspace/input/a.csv
   * }</pre>
   */
  List<Artifact> upload(Path hostPath, String sandboxPath);

  /**
   * Unpacks a host tar archive into {@code sandboxPath}, after checking every entry on the host
   * (tar-slip, absolute names, links pointing outside, device entries, normalisation collisions,
   * size cap).
   */
  List<Artifact> uploadArchive(Path tarFile, String sandboxPath);

  /**
   * Saves this sandbox's files ({@code /workspace}, {@code /tmp}: what differs from the read-only
   * image) and the state of its running Python sessions to the snapshot store on the host ({@code
   * AGENTNEST_HOME/snapshots}); refuses a name that exists. {@link #restore} starts a sandbox from
   * it, also from another process or after a restart. On gVisor (where the engine's root directory
   * is writable: a local dockerd run as root) it also saves process memory, a checkpoint of the
   * whole sandbox, which briefly stops for it and runs on; a restore on gVisor then brings back
   * every live object (generators, open files, threads). Elsewhere process memory is not saved
   * ({@link SnapshotInfo#memoryNote()} says why). Secret values never go to disk: a part holding
   * one fails the save, and a sandbox with secret environment variables saves no memory. See
   * docs/snapshots.md.
   *
   * <pre>{@code
   * sandbox.runCode("model = train()");
   * sandbox.snapshot("trained");
   * // later, anywhere on this host:
   * try (Sandbox sb = Sandbox.restore("trained")) { sb.runCode("model.predict(x)"); }
   * }</pre>
   *
   * @throws SnapshotException {@code BAD_NAME}, {@code EXISTS}, {@code SECRET}, {@code IO}, ...
   */
  default SnapshotInfo snapshot(String name) {
    return snapshot(name, false);
  }

  /** Like {@link #snapshot(String)}; {@code replace} overwrites an existing snapshot. */
  SnapshotInfo snapshot(String name, boolean replace);

  /**
   * Starts a new sandbox from a snapshot, with the configuration it was saved with. The manifest's
   * signature, the image id and every part's sha256 are checked first. A snapshot with process
   * memory ({@link SnapshotInfo#memory()}) starts on gVisor from its checkpoint, with every live
   * object; where that is not possible (another runtime or environment in the config, an engine
   * that cannot restore checkpoints here) its files and Python sessions are restored instead, and
   * the {@code snapshot.restored} audit event says why.
   *
   * @throws SnapshotException {@code NOT_FOUND}, {@code TAMPERED}, {@code CORRUPT}, {@code
   *     IMAGE_CHANGED}, {@code NEEDS_CONFIG} (secrets to give again), ...
   */
  static Sandbox restore(String name) {
    return SandboxRuntimes.get().restore(name, null);
  }

  /**
   * Starts a new sandbox from a snapshot with {@code config} instead of the saved one (same image).
   * Secret environment variables, which snapshots never store, are given here:
   *
   * <pre>{@code
   * SnapshotInfo s = Sandbox.snapshots().stream()
   *     .filter(i -> i.name().equals("trained")).findFirst().orElseThrow();
   * Sandbox.restore("trained", s.config().toBuilder().secretEnv("API_TOKEN", token).build());
   * }</pre>
   */
  static Sandbox restore(String name, SandboxConfig config) {
    return SandboxRuntimes.get().restore(name, config);
  }

  /** The valid snapshots in this installation's store, newest first. */
  static List<SnapshotInfo> snapshots() {
    return SandboxRuntimes.get().snapshots();
  }

  /**
   * Every snapshot of the store, tampered ones included and marked with the problem a restore would
   * refuse them for; {@code hashParts} also hashes every part (reads them all), otherwise the
   * manifest's signature and each part's presence and size are checked.
   */
  static List<SnapshotCheck> checkSnapshots(boolean hashParts) {
    return SandboxRuntimes.get().checkSnapshots(hashParts);
  }

  /** Removes a snapshot (also a tampered one); false when there is none by that name. */
  static boolean removeSnapshot(String name) {
    return SandboxRuntimes.get().removeSnapshot(name);
  }

  /** Path-safe access to the workspace. */
  SandboxFiles files();

  /**
   * Makes {@code 127.0.0.1:sandboxPort} inside the sandbox reachable from the host, on an ephemeral
   * port of the host's loopback (see {@link Exposed}). Nothing needs to listen yet: a connection
   * made before the server is up is closed at once. The sandbox keeps its network policy.
   *
   * @throws ExposeException for a port outside 1..65535 or one the sandbox's own plumbing uses
   * @throws UnsupportedControlException where the backend or client cannot carry connections
   */
  default Exposed expose(int sandboxPort) {
    return expose(sandboxPort, 0);
  }

  /**
   * Starts headless Chromium in this sandbox (an image with Chromium: the {@code browser} preset)
   * and connects to it; see {@link Browser}. Each call starts one more browser.
   *
   * @throws UnsupportedControlException where ports cannot be exposed, or the image has no Chromium
   */
  default Browser browser() {
    throw new UnsupportedControlException(
        "this sandbox ("
            + getClass().getSimpleName()
            + ") cannot run a browser: use a sandbox created in this process (Sandbox.create)"
            + " with the browser preset");
  }

  /**
   * Git repositories in this sandbox's workspace: clone, change, commit, push, export as a patch or
   * bundle to the host; credentials stay on the host (see {@link Git}, docs/git.md). Needs an image
   * with git (the {@code data} and {@code browser} presets have it).
   *
   * <pre>{@code
   * GitWorkspace repo = sb.git().clone("https://github.com/org/app", "app", GitAuth.token(token));
   * }</pre>
   *
   * @throws UnsupportedControlException where the sandbox cannot run git for the host
   */
  default Git git() {
    throw new UnsupportedControlException(
        "this sandbox ("
            + getClass().getSimpleName()
            + ") cannot run git workspaces: use a sandbox created in this process (Sandbox.create)");
  }

  /** As {@link #expose(int)}, on host port {@code hostPort} of 127.0.0.1 (0: an ephemeral one). */
  default Exposed expose(int sandboxPort, int hostPort) {
    throw new UnsupportedControlException(
        "this sandbox ("
            + getClass().getSimpleName()
            + ") cannot expose ports: use a sandbox created in this process (Sandbox.create)");
  }

  /** The configuration the sandbox was created with. */
  SandboxConfig config();

  /** When the sandbox's TTL runs out and it is destroyed. */
  Instant expiresAt();

  /** Pushes the expiry later by {@code more}. */
  void extend(Duration more);

  /**
   * What the sandbox uses right now, as its engine measures it; empty when the backend cannot tell.
   * Each call asks the engine (about a second on Docker): cache it when asking often.
   */
  default Optional<ResourceUsage> usage() {
    return Optional.empty();
  }

  /** Whether the sandbox's agent still answers. */
  boolean isAlive();

  /** Closes this handle's channel but leaves the sandbox running (see {@link #connect}). */
  void detach();

  /** Destroys the sandbox and everything in it. Idempotent. */
  void destroy();

  /** Same as {@link #destroy()}. */
  @Override
  void close();
}
