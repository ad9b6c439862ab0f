package io.agentnest.spi;

import java.io.Closeable;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Optional;

/** A started sandbox and a byte connection to its agent's stdin and stdout. */
public interface BackendSandbox extends Closeable {
  String id();

  /** Bytes the agent writes to its stdout, in order; end of stream when the agent is gone. */
  InputStream fromAgent();

  /**
   * The agent's output as a selectable channel, if this connection has one; when present the host
   * reads it from one shared selector thread instead of a thread per sandbox, and never calls
   * {@link #fromAgent()}. Asked at most once per connection, before anything is read or written.
   */
  default Optional<SelectableAgentStream> selectableStream() {
    return Optional.empty();
  }

  /** Bytes for the agent's stdin. Writes are not buffered beyond what the call needs. */
  OutputStream toAgent();

  /** Last bytes the sandbox's main process wrote to stderr (for error messages), bounded. */
  String diagnostics();

  /** Closes the connection only; the sandbox keeps running. */
  @Override
  void close();
}
