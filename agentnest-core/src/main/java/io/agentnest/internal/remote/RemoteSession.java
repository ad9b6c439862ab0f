package io.agentnest.internal.remote;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.PythonSession;
import java.util.concurrent.CompletableFuture;

/** A named Python session on the server. */
final class RemoteSession implements PythonSession {
  private final RemoteSandbox sandbox;
  private final String name;

  RemoteSession(RemoteSandbox sandbox, String name) {
    this.sandbox = sandbox;
    this.name = name;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public ExecResult run(String code, ExecOptions options) {
    return sandbox.code(code, name, options);
  }

  @Override
  public Execution start(String code, ExecOptions options) {
    return sandbox.startCode(code, name, options);
  }

  @Override
  public CompletableFuture<ExecResult> runAsync(String code, ExecOptions options) {
    return CompletableFuture.supplyAsync(() -> run(code, options));
  }

  @Override
  public void close() {
    // The session lives as long as its sandbox on the server.
  }
}
