package io.agentnest.internal.call;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ConfigException;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.TerminalSession;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.support.Json;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * An exec call on a pseudo-terminal ({@code pty} in its header): its output goes through the same
 * collector, redaction, audit and limits as any exec; keys and window sizes go to the agent as
 * frames of no call ({@code pty_in}, {@code pty_resize}) naming the call.
 */
public final class PtyTerminal implements TerminalSession {
  /** Largest side of a window the agent accepts. */
  public static final int MAX_SIDE = 1000;

  /** Keys are sent in frames of at most this many bytes. */
  static final int KEY_FRAME = 16 * 1024;

  private static final Set<String> TERMS =
      Set.of("xterm-256color", "xterm", "vt100", "screen", "tmux-256color", "linux", "dumb");

  private final AgentChannel channel;
  private final DefaultExecution execution;

  private PtyTerminal(AgentChannel channel, DefaultExecution execution) {
    this.channel = channel;
    this.execution = execution;
  }

  /** Starts {@code argv} on a pty through {@code calls} (approved first, as any exec is). */
  public static PtyTerminal start(
      CallEngine calls,
      AgentChannel channel,
      List<String> argv,
      int rows,
      int cols,
      ExecOptions options) {
    if (rows < 1 || cols < 1 || rows > MAX_SIDE || cols > MAX_SIDE) {
      throw new ConfigException(
          "terminal size "
              + rows
              + "x"
              + cols
              + " is out of range: rows and cols are 1.."
              + MAX_SIDE);
    }
    if (argv.isEmpty()) {
      throw new ConfigException("terminal: give the program to run, e.g. [\"/bin/sh\", \"-i\"]");
    }
    ObjectNode h = CallEngine.argvRequest(argv);
    h.putObject("pty").put("rows", rows).put("cols", cols);
    String term = options.env().get("TERM");
    h.put("term", term != null && TERMS.contains(term) ? term : "xterm-256color");
    DefaultExecution ex = calls.start(h, options.stdin(), options, false);
    PtyTerminal t = new PtyTerminal(channel, ex);
    // Nobody else reads the event stream: drained here, so a full buffer never stalls the channel
    // (the output reaches the caller through onOutput).
    Thread drain =
        new Thread(
            () -> {
              try {
                ex.forEach(e -> {});
              } catch (RuntimeException ended) {
                // The call failed; result() carries why.
              }
            },
            "agentnest-pty-drain");
    drain.setDaemon(true);
    drain.start();
    return t;
  }

  @Override
  public void type(byte[] keys) {
    long id = execution.callId();
    if (id < 0 || execution.result().isDone() || !channel.isAlive()) {
      return; // not started yet (an approval is open) or over: keys typed then go nowhere
    }
    for (int off = 0; off < keys.length; off += KEY_FRAME) {
      byte[] chunk = Arrays.copyOfRange(keys, off, Math.min(keys.length, off + KEY_FRAME));
      channel.send(Json.object().put(Ops.OP, Ops.OP_PTY_IN).put("target", id), chunk);
    }
  }

  @Override
  public void resize(int rows, int cols) {
    long id = execution.callId();
    if (id < 0 || execution.result().isDone() || !channel.isAlive()) {
      return;
    }
    channel.send(
        Json.object()
            .put(Ops.OP, Ops.OP_PTY_RESIZE)
            .put("target", id)
            .put("rows", Math.min(Math.max(rows, 1), MAX_SIDE))
            .put("cols", Math.min(Math.max(cols, 1), MAX_SIDE)),
        new byte[0]);
  }

  @Override
  public boolean started() {
    return execution.callId() >= 0;
  }

  @Override
  public CompletableFuture<ExecResult> result() {
    return execution.result();
  }

  @Override
  public void close() {
    if (!execution.result().isDone()) {
      execution.cancel();
    }
  }
}
