package io.agentnest.internal.call;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.PythonSession;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.support.Json;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/** A named interpreter in the agent, addressed by name on the shared channel. */
public final class DefaultPythonSession implements PythonSession {
  private final CallEngine calls;
  private final String name;

  public DefaultPythonSession(CallEngine calls, String name) {
    this.calls = calls;
    this.name = name;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public ExecResult run(String code, ExecOptions options) {
    return calls.run(
        CallEngine.pythonRequest(name), code.getBytes(StandardCharsets.UTF_8), options, true);
  }

  @Override
  public Execution start(String code, ExecOptions options) {
    return calls.start(
        CallEngine.pythonRequest(name), code.getBytes(StandardCharsets.UTF_8), options, true);
  }

  @Override
  public CompletableFuture<ExecResult> runAsync(String code, ExecOptions options) {
    return start(code, options).result();
  }

  @Override
  public void close() {
    calls.request(
        Json.object().put(Ops.OP, Ops.OP_PY_CLOSE).put("session", name), Duration.ofSeconds(10));
  }
}
