package io.agentnest.internal.call;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.PythonSession;
import io.agentnest.internal.DefaultSandbox;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.support.Json;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/** A named interpreter in the agent, addressed by name on the shared channel. */
public final class DefaultPythonSession implements PythonSession {
  private final DefaultSandbox sandbox;
  private final String name;

  public DefaultPythonSession(DefaultSandbox sandbox, String name) {
    this.sandbox = sandbox;
    this.name = name;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public ExecResult run(String code) {
    return run(code, ExecOptions.defaults());
  }

  @Override
  public ExecResult run(String code, ExecOptions options) {
    ObjectNode h = Json.object().put(Ops.OP, Ops.OP_PY).put("session", name);
    return sandbox.run(h, DefaultSandbox.utf8(code), options, true);
  }

  @Override
  public Execution start(String code, ExecOptions options) {
    ObjectNode h = Json.object().put(Ops.OP, Ops.OP_PY).put("session", name);
    return sandbox.start(h, DefaultSandbox.utf8(code), options, true);
  }

  @Override
  public CompletableFuture<ExecResult> runAsync(String code, ExecOptions options) {
    return start(code, options).result();
  }

  @Override
  public void close() {
    sandbox.checkUsable();
    sandbox
        .channel()
        .request(
            Json.object().put(Ops.OP, Ops.OP_PY_CLOSE).put("session", name),
            new byte[0],
            Duration.ofSeconds(10));
  }
}
