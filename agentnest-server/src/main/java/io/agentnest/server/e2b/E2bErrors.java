package io.agentnest.server.e2b;

import io.agentnest.FileOperationException;
import io.agentnest.server.e2b.E2bConnect.Code;
import io.agentnest.server.e2b.E2bConnect.RpcException;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.service.Failures;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Failures as the E2B SDK reads them: a Connect error code on envd's RPC services, a status and a
 * message on its plain-HTTP file API and the interpreter; core's typed failures go through the
 * server's one table ({@code Failures}) first.
 */
final class E2bErrors {
  private static final Logger LOG = LoggerFactory.getLogger(E2bErrors.class);

  private E2bErrors() {}

  /** A plain-HTTP error of envd's file API or the interpreter: the status and what to do. */
  static final class HttpError extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final int status;

    HttpError(int status, String message) {
      super(message);
      this.status = status;
    }
  }

  static RpcException rpc(RuntimeException e) {
    if (e instanceof RpcException r) {
      return r;
    }
    if (e instanceof HttpError h) {
      return new RpcException(
          switch (h.status) {
            case 400 -> Code.INVALID_ARGUMENT;
            case 401 -> Code.UNAUTHENTICATED;
            case 403 -> Code.PERMISSION_DENIED;
            case 404 -> Code.NOT_FOUND;
            case 429 -> Code.RESOURCE_EXHAUSTED;
            case 502 -> Code.UNAVAILABLE;
            default -> Code.INTERNAL;
          },
          String.valueOf(h.getMessage()));
    }
    if (e instanceof FileOperationException f) {
      Code c =
          switch (f.reason()) {
            case NOT_FOUND -> Code.NOT_FOUND;
            case EXISTS -> Code.ALREADY_EXISTS;
            case BAD_PATH -> Code.INVALID_ARGUMENT;
            case READ_ONLY -> Code.PERMISSION_DENIED;
            case TOO_LARGE, TOO_MANY -> Code.RESOURCE_EXHAUSTED;
            default -> Code.FAILED_PRECONDITION;
          };
      return new RpcException(c, String.valueOf(f.getMessage()));
    }
    ApiException a = e instanceof ApiException x ? x : Failures.of(e);
    if (a.status() >= 500) {
      LOG.warn("E2B call failed", e);
    }
    return E2bConnect.fromApi(a);
  }

  static HttpError http(RuntimeException e) {
    if (e instanceof HttpError h) {
      return h;
    }
    if (e instanceof RpcException r) {
      return new HttpError(r.code.httpStatus, String.valueOf(r.getMessage()));
    }
    ApiException a = e instanceof ApiException x ? x : Failures.of(e);
    if (a.status() >= 500) {
      LOG.warn("E2B call failed", e);
    }
    String fix = a.fix();
    return new HttpError(a.status(), a.getMessage() + (fix.isEmpty() ? "" : " (" + fix + ")"));
  }
}
