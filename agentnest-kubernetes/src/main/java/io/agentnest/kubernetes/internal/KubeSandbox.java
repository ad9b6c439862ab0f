package io.agentnest.kubernetes.internal;

import io.agentnest.spi.BackendSandbox;
import io.fabric8.kubernetes.client.dsl.ExecWatch;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.function.Supplier;

/**
 * A connection to a sandbox pod's agent: the agent runs as an exec in the pod, and the exec's stdin
 * and stdout are the agent's channel. Closing the connection ends that agent (its stdin ends); the
 * pod stays until it is destroyed.
 */
final class KubeSandbox implements BackendSandbox {
  private final String id;
  private final ExecWatch watch;
  private final ByteTail stderr;
  private final Supplier<String> podState;

  KubeSandbox(String id, ExecWatch watch, ByteTail stderr, Supplier<String> podState) {
    this.id = id;
    this.watch = watch;
    this.stderr = stderr;
    this.podState = podState;
  }

  @Override
  public String id() {
    return id;
  }

  @Override
  public InputStream fromAgent() {
    InputStream out = watch.getOutput();
    if (out == null) {
      throw new IllegalStateException("the exec was opened without its stdout");
    }
    return out;
  }

  @Override
  public OutputStream toAgent() {
    OutputStream in = watch.getInput();
    if (in == null) {
      throw new IllegalStateException("the exec was opened without its stdin");
    }
    return in;
  }

  @Override
  public String diagnostics() {
    String err = Text.bounded(stderr.text(), 4000);
    String state;
    try {
      state = podState.get();
    } catch (RuntimeException e) {
      state = "pod state unknown: " + e.getMessage();
    }
    return err.isEmpty() ? state : err + "\n" + state;
  }

  @Override
  public void close() {
    watch.close();
  }
}
