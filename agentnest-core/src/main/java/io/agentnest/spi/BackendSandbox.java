package io.agentnest.spi;

import java.io.Closeable;
import java.io.InputStream;
import java.io.OutputStream;

/** A started sandbox and a byte connection to its agent's stdin and stdout. */
public interface BackendSandbox extends Closeable {
  String id();

  /** Bytes the agent writes to its stdout, in order; end of stream when the agent is gone. */
  InputStream fromAgent();

  /** Bytes for the agent's stdin. Writes are not buffered beyond what the call needs. */
  OutputStream toAgent();

  /** Last bytes the sandbox's main process wrote to stderr (for error messages), bounded. */
  String diagnostics();

  /** Closes the connection only; the sandbox keeps running. */
  @Override
  void close();
}
