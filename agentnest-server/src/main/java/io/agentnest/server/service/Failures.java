package io.agentnest.server.service;

import io.agentnest.ApprovalDeniedException;
import io.agentnest.BackendUnavailableException;
import io.agentnest.CodedException;
import io.agentnest.ConfigException;
import io.agentnest.ExposeException;
import io.agentnest.FailureReason;
import io.agentnest.FileOperationException;
import io.agentnest.GitException;
import io.agentnest.ImageNotFoundException;
import io.agentnest.PoolExhaustedException;
import io.agentnest.SandboxNotFoundException;
import io.agentnest.SnapshotException;
import io.agentnest.UnsupportedControlException;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.Escape;
import io.agentnest.server.http.Tokens;
import io.javalin.http.HttpResponseException;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one mapping from core's typed failures to the HTTP answer every face gives: the {@code /v1}
 * API, the console and the E2B face (which turns the status into its own Connect code). A typed
 * reason's status comes from {@link #status(FailureReason)}, so a reason answers the same on every
 * route; the words of the engine (paths, container ids) never reach the client, only a reference
 * into the server log.
 */
public final class Failures {
  private static final Logger LOG = LoggerFactory.getLogger(Failures.class);

  private Failures() {}

  /**
   * The status of a typed reason: the request's own fault is a 4xx, the host's a 5xx, a sandbox's
   * refused content a 4xx that no retry of the same request changes.
   */
  static int status(FailureReason reason) {
    if (reason instanceof FileOperationException.Reason f) {
      return switch (f) {
        case NOT_FOUND -> 404;
        case TOO_LARGE, TOO_MANY -> 413;
        case BAD_PATH, NOT_A_FILE, NOT_A_DIRECTORY, IS_A_DIRECTORY, EXISTS, NOT_EMPTY, BAD_GLOB ->
            400;
        case READ_ONLY -> 409;
        case HOST_IO -> 500;
        case SYMLINK,
            SECRET_IN_NAME,
            NO_SPACE,
            BAD_ENTRY,
            BAD_ARCHIVE,
            ARCHIVE_REFUSED,
            IO,
            AGENT ->
            422;
      };
    }
    if (reason instanceof SnapshotException.Reason s) {
      return switch (s) {
        case BAD_NAME -> 400;
        case NOT_FOUND -> 404;
        case EXISTS -> 409;
        case NEEDS_CONFIG, SECRET -> 422;
        case DISK_FULL -> 507;
        case TAMPERED, CORRUPT, IMAGE_CHANGED, IO -> 500;
      };
    }
    if (reason instanceof GitException.Reason g) {
      return switch (g) {
        case BAD_URL, BAD_REF, BAD_PATH -> 400;
        case AUTH_FAILED, HOST_REFUSED -> 403;
        case TOO_LARGE -> 413;
        case NO_GIT, FAILED -> 422;
        case HOST_IO -> 500;
      };
    }
    if (reason instanceof ExposeException.Reason x) {
      return switch (x) {
        case BAD_PORT -> 400;
        case HOST_PORT_UNAVAILABLE -> 409;
        case TOO_MANY_PORTS -> 429;
      };
    }
    // A reason of a type this table does not know yet: who must act decides the class.
    return switch (reason.actor()) {
      case CALLER -> 400;
      case SANDBOX -> 422;
      case OPERATOR -> 500;
    };
  }

  /** Javalin's own refusals (no route, wrong method, a body over the bound). */
  public static ApiException of(HttpResponseException e) {
    return switch (e.getStatus()) {
      case 404 ->
          new ApiException(
              404,
              ErrorCode.NOT_FOUND,
              "no such route",
              "see docs/openapi.yaml for the routes, all under /v1/");
      case 405 ->
          new ApiException(
              405,
              ErrorCode.METHOD_NOT_ALLOWED,
              "this route does not take that method",
              "see docs/openapi.yaml for the methods of each route");
      case 413 ->
          new ApiException(
              413,
              ErrorCode.BODY_TOO_LARGE,
              "the request body is too large",
              "send a smaller body; the server's max_body bounds it");
      default ->
          new ApiException(
              e.getStatus(), ErrorCode.INVALID_FIELD, String.valueOf(e.getMessage()), "fix it");
    };
  }

  /** Maps the core's exceptions (thrown by the embedded runtime) to API errors. */
  public static ApiException of(RuntimeException e) {
    if (e instanceof ApiException a) {
      return a;
    }
    if (e instanceof SandboxNotFoundException) {
      return ApiException.notFound("sandbox");
    }
    if (e instanceof FileOperationException f) {
      ErrorCode code =
          f.reason() == FileOperationException.Reason.BAD_PATH
              ? ErrorCode.BAD_PATH
              : ErrorCode.FILE;
      return typed(
          f,
          code,
          String.valueOf(f.getMessage()),
          "use a path relative to /workspace without '..'");
    }
    if (e instanceof GitException g) {
      return typed(g, ErrorCode.POLICY, String.valueOf(g.getMessage()), "change the request");
    }
    if (e instanceof ExposeException x) {
      return typed(
          x, ErrorCode.POLICY, String.valueOf(x.getMessage()), "choose another port, or fewer");
    }
    if (e instanceof SnapshotException s) {
      // Snapshot routes answer with the client's own name (StateApi); elsewhere the reason only,
      // since the store's message names stored names and host paths.
      return typed(
          s,
          ErrorCode.SNAPSHOT,
          "the snapshot failed: " + s.code(),
          "see the server log; retry once the operator has checked the store");
    }
    if (e instanceof ApprovalDeniedException d) {
      // A person (or the timeout) said no: the caller's answer, not a failed sandbox. The target
      // comes from the sandbox, so it is quoted bounded and printable.
      return new ApiException(
          403,
          ErrorCode.APPROVAL_DENIED,
          d.kind() + " '" + Escape.id(d.target()) + "' was not run: " + Escape.id(d.reason()),
          "ask the approver, or change the sandbox's approvals",
          Map.of(
              "kind", d.kind(), "target", Escape.id(d.target()), "reason", Escape.id(d.reason())));
    }
    if (e instanceof ConfigException || e instanceof UnsupportedControlException) {
      return new ApiException(
          422, ErrorCode.POLICY, String.valueOf(e.getMessage()), "change the request");
    }
    // The engine's words (runc and cgroup paths, container ids, the host's layout) stay in the
    // server log under a reference the tenant can quote to the operator (issue 42, LOW 18).
    String ref = "ref-" + Tokens.random().substring(0, 12);
    LOG.warn("sandbox call failed ({})", ref, e);
    if (e instanceof BackendUnavailableException || e instanceof PoolExhaustedException) {
      return new ApiException(
          503,
          ErrorCode.SANDBOX_FAILED,
          (e instanceof PoolExhaustedException
                  ? "no pooled sandbox is free right now"
                  : "the sandbox engine is unavailable right now")
              + "; the server log has the cause under "
              + ref,
          "retry in a moment; if it persists, give the operator " + ref,
          Map.of("reference", ref));
    }
    if (e instanceof ImageNotFoundException) {
      return new ApiException(
          422,
          ErrorCode.POLICY,
          "the sandbox's image is not on the server's engine; the server log has the cause under "
              + ref,
          "ask the operator to build it ('agentnest image build') and give them " + ref,
          Map.of("reference", ref));
    }
    return new ApiException(
        502,
        ErrorCode.SANDBOX_FAILED,
        "the sandbox failed ("
            + e.getClass().getSimpleName()
            + "); the server log has the cause under "
            + ref,
        "retry; destroy and recreate the sandbox if it persists, or give the operator " + ref,
        Map.of("reference", ref));
  }

  private static ApiException typed(CodedException e, ErrorCode code, String message, String fix) {
    return new ApiException(
        status(e.reason()), code, message, fix, Map.of("reason", e.reason().code()));
  }
}
