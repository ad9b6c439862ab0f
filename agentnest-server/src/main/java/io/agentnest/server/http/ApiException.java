package io.agentnest.server.http;

import java.util.Map;

/**
 * A request the server refuses: the HTTP status, a stable code, what is wrong and how to fix it.
 * Every refusal reaches the client as {@code {"error": {"code", "message", "fix", ...}}}.
 */
public final class ApiException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int status;
  private final ErrorCode code;
  private final String fix;
  private final transient Map<String, Object> details;

  public ApiException(int status, ErrorCode code, String message, String fix) {
    this(status, code, message, fix, Map.of());
  }

  public ApiException(
      int status, ErrorCode code, String message, String fix, Map<String, Object> details) {
    super(message);
    this.status = status;
    this.code = code;
    this.fix = fix;
    this.details = Map.copyOf(details);
  }

  public int status() {
    return status;
  }

  public ErrorCode code() {
    return code;
  }

  public String fix() {
    return fix;
  }

  public Map<String, Object> details() {
    return details;
  }

  public static ApiException badRequest(ErrorCode code, String message, String fix) {
    return new ApiException(400, code, message, fix);
  }

  public static ApiException notFound(String what) {
    return new ApiException(
        404,
        ErrorCode.NOT_FOUND,
        what + " not found",
        "list yours with GET /v1/sandboxes; ids of other tenants are never visible");
  }
}
