package io.agentnest.internal.egress;

import java.io.IOException;
import org.jspecify.annotations.Nullable;

/** The client's request body ended or failed before its declared end. */
final class ClientBodyException extends IOException {
  private static final long serialVersionUID = 1L;

  ClientBodyException(String message, @Nullable Throwable cause) {
    super(message, cause);
  }
}
