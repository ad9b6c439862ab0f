package io.agentnest.audit;

import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * One record of the audit trail: a line of {@code events.jsonl}. The schema (version {@value
 * #SCHEMA}) is documented in {@code docs/audit.md}.
 *
 * <p>{@code hash} is the SHA-256 (lower-case hex) of the record's canonical JSON without the {@code
 * hash} field, that is of every other field including {@code prevHash}; {@code prevHash} is the
 * previous record's {@code hash} ({@link #GENESIS} for the first record). Records are chained:
 * editing, deleting, inserting or reordering a line breaks the chain, and {@link AuditLog#verify()}
 * finds where.
 *
 * @param seq position in the log, 1 for the first record, no gaps
 * @param time when the record was written (microsecond precision, UTC)
 * @param type one of the documented types ({@link #TYPES})
 * @param sandboxId the sandbox concerned; {@code null} only for {@link #CONFIG_LOADED}
 * @param actor the host process that wrote the record ({@code host:pid:start-millis})
 * @param data type-specific fields: strings, numbers, booleans, null, lists and maps of these
 *     (never secret values)
 * @param prevHash hash of the previous record
 * @param hash hash of this record
 * @param schema the schema version, {@value #SCHEMA}
 */
public record AuditEvent(
    long seq,
    Instant time,
    String type,
    @Nullable String sandboxId,
    String actor,
    Map<String, Object> data,
    String prevHash,
    String hash,
    int schema) {

  /** The current schema version. */
  public static final int SCHEMA = 1;

  /** {@code prevHash} of the first record: 64 zeros. */
  public static final String GENESIS = "0".repeat(64);

  public static final String SANDBOX_CREATED = "sandbox.created";
  public static final String SANDBOX_DESTROYED = "sandbox.destroyed";

  /** A pooled sandbox handed to its user ({@code SandboxPool}): its life as theirs starts here. */
  public static final String SANDBOX_ACQUIRED = "sandbox.acquired";

  public static final String SANDBOX_EXPIRED = "sandbox.expired";

  /** A sandbox's TTL moved ({@code extend}): by how much, and its new expiry. */
  public static final String SANDBOX_EXTENDED = "sandbox.extended";

  public static final String EXEC_STARTED = "exec.started";
  public static final String EXEC_FINISHED = "exec.finished";
  public static final String FILE_READ = "file.read";
  public static final String FILE_WRITE = "file.write";
  public static final String FILE_DELETE = "file.delete";
  public static final String NETWORK_ATTEMPT = "network.attempt";

  /** The egress proxy added a credential to a request (named, never shown). */
  public static final String NETWORK_CREDENTIAL_USED = "network.credential_used";

  /** A credential placeholder went to a host other than its own: not swapped. */
  public static final String NETWORK_PLACEHOLDER_LEAK = "network.placeholder_leak";

  /** A request to a host with credential rules fell outside its request rules: not forwarded. */
  public static final String NETWORK_REQUEST_DENIED = "network.request_denied";

  public static final String APPROVAL_REQUESTED = "approval.requested";
  public static final String APPROVAL_DECIDED = "approval.decided";
  public static final String POLICY_VIOLATION = "policy.violation";
  public static final String LIMIT_HIT = "limit.hit";
  public static final String SECRET_REDACTED = "secret.redacted";
  public static final String CONFIG_LOADED = "config.loaded";
  public static final String SANDBOX_FORKED = "sandbox.forked";
  public static final String SNAPSHOT_SAVED = "snapshot.saved";
  public static final String SNAPSHOT_RESTORED = "snapshot.restored";
  public static final String SNAPSHOT_REMOVED = "snapshot.removed";
  public static final String ARTIFACTS_EXPORTED = "artifacts.exported";
  public static final String FILES_UPLOADED = "files.uploaded";

  /** A port inside the sandbox was made reachable on the host's loopback (Sandbox.expose). */
  public static final String PORT_EXPOSED = "port.exposed";

  /** One host connection to an exposed port ended (bytes each way, duration). */
  public static final String PORT_CONNECTION = "port.connection";

  /** An exposed port stopped listening (closed, or its sandbox went away). */
  public static final String PORT_CLOSED = "port.closed";

  /**
   * Git's askpass helper asked for a credential (builds before issue 42; no longer written: git's
   * credentials are added by the egress proxy, audited as {@link #NETWORK_CREDENTIAL_USED}). Kept
   * so that older trails still name their records.
   */
  public static final String GIT_CREDENTIAL = "git.credential";

  /**
   * A git operation that reaches a remote (clone, fetch, push) ran: its remote host and outcome.
   */
  public static final String GIT_OPERATION = "git.operation";

  /** Every documented event type; {@link AuditLog#record} refuses others. */
  public static final Set<String> TYPES =
      Set.of(
          SANDBOX_CREATED,
          SANDBOX_DESTROYED,
          SANDBOX_ACQUIRED,
          SANDBOX_EXPIRED,
          SANDBOX_EXTENDED,
          EXEC_STARTED,
          EXEC_FINISHED,
          FILE_READ,
          FILE_WRITE,
          FILE_DELETE,
          NETWORK_ATTEMPT,
          NETWORK_CREDENTIAL_USED,
          NETWORK_PLACEHOLDER_LEAK,
          NETWORK_REQUEST_DENIED,
          APPROVAL_REQUESTED,
          APPROVAL_DECIDED,
          POLICY_VIOLATION,
          LIMIT_HIT,
          SECRET_REDACTED,
          CONFIG_LOADED,
          SANDBOX_FORKED,
          SNAPSHOT_SAVED,
          SNAPSHOT_RESTORED,
          SNAPSHOT_REMOVED,
          ARTIFACTS_EXPORTED,
          FILES_UPLOADED,
          PORT_EXPOSED,
          PORT_CONNECTION,
          PORT_CLOSED,
          GIT_CREDENTIAL,
          GIT_OPERATION);

  public AuditEvent {
    Objects.requireNonNull(time, "time");
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(actor, "actor");
    Objects.requireNonNull(data, "data");
    Objects.requireNonNull(prevHash, "prevHash");
    Objects.requireNonNull(hash, "hash");
  }

  /**
   * The {@code decision} field of {@link #data} when it is a string (network, approvals), in its
   * normal form: {@code allow}, {@code deny} or {@code approve} ({@code DENIED} reads as {@code
   * deny}).
   */
  public @Nullable String decision() {
    return data.get("decision") instanceof String s ? normalDecision(s) : null;
  }

  /** Lower case, and the past tenses of network events mapped to the verbs: denied to deny. */
  public static String normalDecision(String decision) {
    String d = decision.strip().toLowerCase(Locale.ROOT);
    return switch (d) {
      case "denied", "refused" -> "deny";
      case "allowed" -> "allow";
      case "approved" -> "approve";
      default -> d;
    };
  }

  /** This record as its line of {@code events.jsonl} (without the newline). */
  public String toJson() {
    return AuditJson.line(this);
  }

  /**
   * Parses one line of {@code events.jsonl}.
   *
   * @throws IllegalArgumentException when the line is not a well-formed record
   */
  public static AuditEvent fromJson(String line) {
    return AuditJson.parse(line);
  }
}
