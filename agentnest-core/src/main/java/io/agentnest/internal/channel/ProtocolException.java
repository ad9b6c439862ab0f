package io.agentnest.internal.channel;

import java.io.IOException;

/** The sandbox sent bytes that break the channel protocol. */
public final class ProtocolException extends IOException {
  private static final long serialVersionUID = 1L;

  public ProtocolException(String message) {
    super(message);
  }
}
