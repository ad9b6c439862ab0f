package io.agentnest.server.http;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.UnrecognizedPropertyException;
import io.agentnest.ExecError;
import io.agentnest.ExecEvent;
import io.agentnest.ExecResult;
import io.agentnest.FileInfo;
import io.agentnest.Limit;
import io.agentnest.OutputChunk;
import java.io.IOException;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/** The JSON shapes of the HTTP API (docs/openapi.yaml) and their strict reading. */
public final class Wire {
  private Wire() {}

  public static final ObjectMapper JSON =
      new ObjectMapper()
          .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
          .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  /** POST /v1/sandboxes. */
  public record CreateSandbox(
      @Nullable String image,
      @Nullable Long memoryBytes,
      @Nullable Double cpus,
      @Nullable Long ttlSeconds,
      @Nullable Map<String, String> env,
      @Nullable List<String> allowHosts,
      @Nullable JsonNode approvals,
      @Nullable Map<String, String> labels,
      @Nullable String runtime,
      @Nullable Long pidsLimit,
      @Nullable Long tmpSizeBytes,
      @Nullable Long workspaceSizeBytes,
      @Nullable Boolean askUnknownHosts,
      @Nullable Map<String, String> secretEnv,
      @Nullable List<Credential> credentials,
      @Nullable Map<String, JsonNode> limits) {

    /** What the E2B face asks for: its template's image, TTL, environment, hosts and approvals. */
    public static CreateSandbox basic(
        String image,
        @Nullable Long ttlSeconds,
        @Nullable Map<String, String> env,
        @Nullable List<String> allowHosts,
        @Nullable JsonNode approvals) {
      return new CreateSandbox(
          image,
          null,
          null,
          ttlSeconds,
          env,
          allowHosts,
          approvals,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null,
          null);
    }
  }

  /**
   * A credential the egress proxy adds for {@code host} and the sandbox never holds: {@code header}
   * ({@code "Authorization: Bearer ${secret:NAME}"}) on each HTTPS request to it, or, with {@code
   * placeholder}, an opaque value in the sandbox's environment variable {@code name} that the proxy
   * swaps for {@code value} in requests to {@code host} only.
   */
  public record Credential(
      @Nullable String host,
      @Nullable String name,
      @Nullable String value,
      @Nullable String header,
      @Nullable Boolean placeholder) {}

  /** POST /v1/approvals/{id}. */
  public record Decide(boolean approve, @Nullable String reason) {}

  public record ApprovalView(
      String id,
      String tenant,
      String sandboxId,
      String kind,
      String target,
      String detail,
      String requestedAt,
      String expiresAt) {}

  /** POST /v1/sandboxes/{id}/extend. */
  public record Extend(long seconds) {}

  /** POST /v1/sandboxes/{id}/exec: a shell command or an argv, not both. */
  public record Exec(
      @Nullable String command,
      @Nullable List<String> argv,
      @Nullable Long timeoutSeconds,
      @Nullable String workdir,
      @Nullable Map<String, String> env,
      @Nullable String stdin,
      @Nullable Long maxOutputBytes,
      @Nullable OnDisconnect onDisconnect) {}

  /** What a streamed execution does when its client goes away: stop (default) or run on. */
  public enum OnDisconnect {
    @JsonProperty("cancel")
    CANCEL,
    @JsonProperty("continue")
    CONTINUE
  }

  /** POST /v1/sandboxes/{id}/code. */
  public record Code(
      String code,
      @Nullable String session,
      @Nullable Long timeoutSeconds,
      @Nullable Long maxOutputBytes,
      @Nullable OnDisconnect onDisconnect) {}

  /** POST /v1/sandboxes/{id}/files/mkdir. */
  public record MakeDir(String path) {}

  public record SandboxView(
      String id,
      String tenant,
      String image,
      long memoryBytes,
      double cpus,
      String createdAt,
      String expiresAt,
      @Nullable String runtime,
      Map<String, String> labels,
      @Nullable Double cpusInUse,
      @Nullable Long memoryInUseBytes) {}

  /** POST /v1/sandboxes/{id}/snapshots. */
  public record SaveSnapshot(String name, @Nullable Boolean replace) {}

  /** A fork: the new sandbox and how its state was carried (checkpoint or state transfer). */
  public record ForkView(
      SandboxView sandbox, @Nullable String mode, @Nullable ForkReportView report) {}

  /** What a fork carried ({@link io.agentnest.ForkReport}). */
  public record ForkReportView(
      String parentId,
      String mode,
      Map<String, List<String>> sessions,
      List<SkippedView> skipped,
      long fileBytes,
      long stateBytes,
      long durationMillis) {}

  public record SkippedView(String session, String name, String type, String reason) {}

  public record SnapshotView(
      String name,
      String createdAt,
      String image,
      long bytes,
      List<String> sessions,
      boolean memory) {}

  public record ArtifactView(String path, long size, String sha256) {}

  public record AuditView(
      long seq,
      String time,
      String type,
      String actor,
      @Nullable String sandboxId,
      Map<String, Object> data) {}

  record ErrorView(String name, String value, String traceback) {}

  record ResultView(
      int exitCode,
      String stdout,
      String stderr,
      @Nullable String result,
      @Nullable ErrorView error,
      long durationMillis,
      @Nullable String limit,
      boolean truncated,
      boolean stateLost,
      Map<String, Integer> redactions) {}

  public record FileView(String path, String type, long size, int mode, String modified) {}

  public record Usage(int sandboxes, long memoryBytes, double cpus) {}

  public record TenantView(
      String name,
      int maxSandboxes,
      long memoryBytes,
      double cpus,
      int requestsPerSecond,
      int executionsPerMinute,
      Usage usage,
      int executionsLastMinute,
      String role,
      boolean approverRoleRequired) {}

  /** One event of a streamed execution, as server-sent events and WebSocket messages name it. */
  public record Event(@JsonProperty("event") String name, Object data) {}

  /** The wire form of an execution's event; null for one the wire does not carry. */
  public static @Nullable Event event(ExecEvent ev) {
    if (ev instanceof ExecEvent.Output o) {
      return new Event(
          o.chunk().stream() == OutputChunk.Stream.STDOUT ? "stdout" : "stderr",
          Map.of("text", o.chunk().text()));
    } else if (ev instanceof ExecEvent.Truncated t) {
      return new Event("truncated", Map.of("deliveredBytes", t.deliveredBytes()));
    } else if (ev instanceof ExecEvent.Dropped d) {
      return new Event("dropped", Map.of("bytes", d.bytes()));
    } else if (ev instanceof ExecEvent.Finished f) {
      return new Event("result", result(f.result()));
    } else if (ev instanceof ExecEvent.Rich r) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("mimeType", r.output().mimeType());
      m.put("base64", Base64.getEncoder().encodeToString(r.output().data()));
      return new Event("rich", m);
    }
    return null;
  }

  public static ResultView result(ExecResult r) {
    ExecError e = r.error();
    Limit l = r.limit();
    return new ResultView(
        r.exitCode(),
        r.stdout(),
        r.stderr(),
        r.result(),
        e == null ? null : new ErrorView(e.name(), e.value(), e.traceback()),
        r.duration().toMillis(),
        l == null ? null : l.name().toLowerCase(Locale.ROOT),
        r.truncated(),
        r.stateLost(),
        r.redactions());
  }

  public static FileView file(FileInfo f) {
    return new FileView(
        f.path(),
        f.type().name().toLowerCase(Locale.ROOT),
        f.size(),
        f.mode(),
        f.modified().toString());
  }

  public static byte[] write(Object value) {
    try {
      return JSON.writeValueAsBytes(value);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  public static Map<String, Object> error(ApiException e) {
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("code", e.code().wire());
    body.put("message", e.getMessage());
    body.put("fix", e.fix());
    body.putAll(e.details());
    return Map.of("error", body);
  }

  /**
   * Create-request fields that would name secrets instead of carrying them: refused with a reason.
   * ({@code credentials} and {@code secretEnv} carry their values and are fields of the request.)
   */
  private static final Set<String> CREDENTIAL_FIELDS = Set.of("secrets", "inject", "placeholders");

  /** Reads a request body as {@code type}; every problem becomes a 400 naming the field. */
  public static <T> T read(byte[] body, Class<T> type) {
    if (body.length == 0) {
      throw ApiException.badRequest(
          ErrorCode.MALFORMED_JSON,
          "the request body is empty",
          "send a JSON object, e.g. " + example(type));
    }
    try {
      return JSON.readValue(body, type);
    } catch (UnrecognizedPropertyException e) {
      if (type == CreateSandbox.class && CREDENTIAL_FIELDS.contains(e.getPropertyName())) {
        // The proxy reads secrets from the environment of the process that runs it: here, the
        // server's. A tenant must never be able to name one of those.
        throw new ApiException(
            400,
            ErrorCode.POLICY,
            "secrets cannot be named over the API: they would be read from the server's"
                + " environment, which no tenant may name",
            "remove '"
                + e.getPropertyName()
                + "'; send each credential with its own value in credentials (the sandbox never"
                + " holds it; see network.credentials for the embedded form)");
      }
      throw ApiException.badRequest(
          ErrorCode.UNKNOWN_FIELD,
          "unknown field '" + e.getPropertyName() + "'",
          "remove it; the fields are "
              + e.getKnownPropertyIds().stream()
                  .map(Object::toString)
                  .sorted()
                  .collect(Collectors.joining(", ")));
    } catch (MismatchedInputException e) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD,
          "field '" + path(e) + "' has the wrong type or is missing: " + e.getOriginalMessage(),
          "send e.g. " + example(type));
    } catch (JsonMappingException e) {
      throw ApiException.badRequest(
          ErrorCode.INVALID_FIELD,
          "field '" + path(e) + "' is invalid: " + e.getOriginalMessage(),
          "send e.g. " + example(type));
    } catch (JsonProcessingException e) {
      var loc = e.getLocation();
      throw ApiException.badRequest(
          ErrorCode.MALFORMED_JSON,
          "the body is not valid JSON"
              + (loc == null ? "" : " at line " + loc.getLineNr() + ", column " + loc.getColumnNr())
              + ": "
              + e.getOriginalMessage(),
          "send a JSON object, e.g. " + example(type));
    } catch (IOException e) {
      throw ApiException.badRequest(
          ErrorCode.MALFORMED_JSON, "the body could not be read: " + e.getMessage(), "send again");
    }
  }

  private static String path(JsonMappingException e) {
    return e.getPath().stream()
        .map(r -> r.getFieldName() != null ? r.getFieldName() : "[" + r.getIndex() + "]")
        .collect(Collectors.joining("."));
  }

  private static String example(Class<?> type) {
    if (type == Exec.class) {
      return "{\"command\": \"ls -la\"}";
    }
    if (type == Code.class) {
      return "{\"code\": \"print(1)\"}";
    }
    if (type == Decide.class) {
      return "{\"approve\": false, \"reason\": \"not on a Friday\"}";
    }
    if (type == SaveSnapshot.class) {
      return "{\"name\": \"trained\"}";
    }
    if (type == Extend.class) {
      return "{\"seconds\": 600}";
    }
    return "{\"memoryBytes\": 536870912, \"ttlSeconds\": 600}";
  }
}
