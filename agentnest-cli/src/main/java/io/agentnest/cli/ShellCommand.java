package io.agentnest.cli;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Sandbox;
import io.agentnest.TerminalSession;
import io.agentnest.spi.support.ExitHooks;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** An interactive terminal in a running sandbox. */
@Command(
    name = "shell",
    mixinStandardHelpOptions = true,
    description = {
      "Opens an interactive shell on a pseudo-terminal in a running sandbox, sized to this"
          + " window and resized with it. Cursor movement, colours and line editing work;"
          + " what reaches beyond the screen (clipboard writes, titles, hyperlinks, window"
          + " manipulation, terminal-specific strings) is shown, not obeyed. Exits with the"
          + " shell's status; the sandbox keeps running. Needs a terminal: for scripts use exec.",
      "  agentnest shell 3f2a9c",
      "  agentnest shell 3f2a9c -- python3"
    })
final class ShellCommand implements Callable<Integer> {
  /** A session's output cap: an interactive session is long, but the host keeps what it printed. */
  static final long MAX_OUTPUT = 256L << 20;

  @Parameters(index = "0", paramLabel = "ID", description = "Sandbox id or unique prefix.")
  String sandbox = "";

  @Parameters(
      index = "1..*",
      arity = "0..*",
      paramLabel = "CMD",
      description = "Program to run instead of the shell (after --).")
  List<String> command = new ArrayList<>();

  @Option(
      names = "--raw",
      description = "Pass every byte to this terminal, including what reaches beyond the screen.")
  boolean raw;

  @Mixin AttachOptions attach = new AttachOptions();

  @Spec CommandSpec spec;

  @Override
  public Integer call() throws IOException, InterruptedException {
    if (!Terminals.isTerminal(0) || !Terminals.isTerminal(1)) {
      throw new ParameterException(
          spec.commandLine(),
          "agentnest shell needs a terminal on stdin and stdout: run it in one, or use"
              + " 'agentnest exec "
              + sandbox
              + " -- sh -c ...' from a script");
    }
    TtyMode tty = TtyMode.current();
    PrintStream out = System.out;
    PtyOutputFilter filter = raw ? null : new PtyOutputFilter();
    Sandbox sb = attach.connect(sandbox, OpenQuestions.NONE);
    try {
      List<String> argv =
          command.isEmpty()
              ? List.of("/bin/sh", "-c", "exec $(command -v bash || echo /bin/sh) -i")
              : command;
      Duration left = Duration.between(Instant.now(), sb.expiresAt());
      ExecOptions opts =
          ExecOptions.builder()
              .timeout(left.isNegative() || left.isZero() ? Duration.ofSeconds(1) : left)
              .maxOutputBytes(MAX_OUTPUT)
              .env("TERM", term())
              .onOutput(
                  c -> {
                    byte[] shown =
                        filter == null ? c.data() : filter.feed(c.data(), 0, c.data().length);
                    out.write(shown, 0, shown.length);
                    out.flush();
                  })
              .build();
      TtyMode.Size size = tty.size();
      try (TerminalSession t = sb.terminal(argv, size.rows(), size.cols(), opts)) {
        // A hang-up or SIGTERM ends this process: the shell ends with it, not at the TTL.
        ExitHooks.add(ExitHooks.SANDBOXES, t::close);
        // An approval the shell needs is asked on this terminal, before it goes raw.
        for (int i = 0; !t.started() && !t.result().isDone() && i < 36_000; i++) {
          Thread.sleep(50);
        }
        return run(t, tty, size);
      }
    } finally {
      sb.detach();
    }
  }

  private static int run(TerminalSession t, TtyMode tty, TtyMode.Size initial)
      throws InterruptedException {
    tty.raw();
    try {
      Thread keys = keyboard(t);
      WindowWatch watch = WindowWatch.start(tty, initial, t::resize);
      try {
        ExecResult r = t.result().get();
        if (r.limit() != null) {
          System.err.print("\r\nagentnest: the shell was stopped by limit " + r.limit() + "\r\n");
          return ExitCodes.LIMIT;
        }
        return r.exitCode();
      } catch (ExecutionException e) {
        Throwable cause = e.getCause() == null ? e : e.getCause();
        throw cause instanceof RuntimeException re ? re : new IllegalStateException(cause);
      } finally {
        watch.stop();
        keys.interrupt();
      }
    } finally {
      tty.restore();
    }
  }

  /** Reads this terminal's keys (raw: byte by byte as typed) and types them into the sandbox. */
  private static Thread keyboard(TerminalSession t) {
    InputStream in = System.in;
    Thread keys =
        new Thread(
            () -> {
              byte[] buf = new byte[4096];
              try {
                int n;
                while ((n = in.read(buf)) > 0) {
                  byte[] typed = new byte[n];
                  System.arraycopy(buf, 0, typed, 0, n);
                  t.type(typed);
                }
              } catch (IOException | RuntimeException ended) {
                // The terminal or the session is gone; the result says how it ended.
              }
            },
            "agentnest-shell-keys");
    keys.setDaemon(true);
    keys.start();
    return keys;
  }

  private static String term() {
    String t = System.getenv("TERM");
    return t == null || t.isBlank() ? "xterm-256color" : t;
  }
}
