package io.agentnest.server.v1;

import io.agentnest.ExecEvent;
import io.agentnest.Execution;
import io.agentnest.server.approvals.ApproverRole;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.http.ErrorCode;
import io.agentnest.server.http.OpenStreams;
import io.agentnest.server.http.StreamThreads;
import io.agentnest.server.http.Tokens;
import io.agentnest.server.http.Wire;
import io.agentnest.server.service.Failures;
import io.javalin.http.Context;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;

/**
 * A running execution of the {@code /v1} routes as server-sent events: its chunks, a keep-alive
 * comment every few seconds, its result, and the cancel by the id its {@code started} event gave.
 */
final class ExecutionEvents implements AutoCloseable {
  private static final long KEEPALIVE_SECONDS = 5;

  /** Streamed executions while they run, by sandbox id + "/" + execution id (for cancel). */
  private final Map<String, Execution> streaming = new ConcurrentHashMap<>();

  private final OpenStreams streams;

  private final ScheduledExecutorService keepalive =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "agentnest-server-keepalive");
            t.setDaemon(true);
            return t;
          });

  /**
   * Where keep-alive comments are written: the scheduler above only hands them out, so a stream
   * whose client does not read blocks its own writer, never another tenant's keep-alives.
   */
  private final ThreadPoolExecutor pings =
      StreamThreads.pool("agentnest-server-ping", StreamThreads.MAX_PINGS);

  ExecutionEvents(OpenStreams streams) {
    this.streams = streams;
  }

  /** The streamed execution {@code executionId} of the sandbox while it runs, else null. */
  @Nullable Execution running(String sandboxId, String executionId) {
    return streaming.get(sandboxId + "/" + executionId);
  }

  /**
   * Sends an execution as server-sent events: {@code stdout}/{@code stderr} chunks, {@code
   * truncated}, then one {@code result}. A client that goes away cancels the execution: the next
   * write (output or the keep-alive comment every few seconds) fails and the command is stopped.
   */
  void stream(Context ctx, String sandboxId, Execution execution, boolean keepOnLeave) {
    String executionId = "x-" + Tokens.random().substring(0, 16);
    String key = sandboxId + "/" + executionId;
    streaming.put(key, execution);
    try {
      writeEvents(ctx, executionId, execution, keepOnLeave);
    } finally {
      streaming.remove(key);
    }
  }

  /**
   * Writes the events; when the client is gone (a write fails) the execution is cancelled, or, with
   * {@code keepOnLeave}, runs on to its end with its events dropped here (the console's tap and the
   * audit still see it; its timeout still bounds it).
   */
  private void writeEvents(
      Context ctx, String executionId, Execution execution, boolean keepOnLeave) {
    ctx.status(200);
    ctx.contentType("text/event-stream");
    ctx.header("Cache-Control", "no-store");
    ctx.header("X-Accel-Buffering", "no");
    ReentrantLock lock = new ReentrantLock();
    AtomicBoolean gone = new AtomicBoolean();
    AtomicBoolean pinging = new AtomicBoolean();
    AtomicBoolean revoked = new AtomicBoolean();
    Runnable leave =
        () -> {
          gone.set(true);
          if (!keepOnLeave) {
            execution.cancel();
          }
        };
    OutputStream out;
    try {
      out = ctx.res().getOutputStream();
    } catch (IOException e) {
      leave.run();
      drain(execution, keepOnLeave);
      return;
    }
    Runnable pingOnce =
        () -> {
          // A stream busy writing (or blocked on its client) needs no keep-alive.
          if (!lock.tryLock()) {
            pinging.set(false);
            return;
          }
          try {
            if (!gone.get()) {
              out.write(": keep-alive\n\n".getBytes(StandardCharsets.US_ASCII));
              out.flush();
            }
          } catch (IOException | RuntimeException e) {
            leave.run();
          } finally {
            lock.unlock();
            pinging.set(false);
          }
        };
    // The key that opened the stream is checked while it runs: revoked, the execution stops and
    // nothing more of it is sent (the checker's thread never writes: a client that does not read
    // cannot hold it).
    OpenStreams.Watch watch =
        streams.watch(
            ctx.attribute(ApproverRole.KEY_ID),
            () -> {
              revoked.set(true);
              gone.set(true);
              execution.cancel();
            });
    ScheduledFuture<?> ping =
        keepalive.scheduleAtFixedRate(
            () -> {
              // At most one keep-alive of this stream in flight; a full pool skips this one.
              if (gone.get() || !pinging.compareAndSet(false, true)) {
                return;
              }
              try {
                pings.execute(pingOnce);
              } catch (RejectedExecutionException full) {
                pinging.set(false);
              }
            },
            KEEPALIVE_SECONDS,
            KEEPALIVE_SECONDS,
            TimeUnit.SECONDS);
    try {
      write(
          lock,
          out,
          gone,
          leave,
          ("event: started\ndata: {\"execution\":\"" + executionId + "\"}\n\n")
              .getBytes(StandardCharsets.US_ASCII));
      for (ExecEvent ev : execution) {
        Wire.Event event = Wire.event(ev);
        if (event == null || gone.get()) {
          continue;
        }
        write(
            lock,
            out,
            gone,
            leave,
            ("event: "
                    + event.name()
                    + "\ndata: "
                    + new String(Wire.write(event.data()), StandardCharsets.UTF_8)
                    + "\n\n")
                .getBytes(StandardCharsets.UTF_8));
      }
    } catch (RuntimeException e) {
      // The execution failed after its stream began (a refused approval, a lost sandbox): the
      // client gets the same error it would get without a stream, as a last event, not a stream
      // that just stops.
      write(lock, out, gone, leave, errorEvent(e));
      leave.run();
      drain(execution, keepOnLeave);
    } finally {
      ping.cancel(false);
      watch.close();
    }
    if (revoked.get()) {
      writeRevoked(lock, out);
    }
  }

  /** The last event of a stream whose key was revoked while it ran. */
  private static void writeRevoked(ReentrantLock lock, OutputStream out) {
    ApiException e =
        new ApiException(
            401,
            ErrorCode.KEY_REVOKED,
            "the API key that opened this stream was revoked (or expired) while it ran: the"
                + " execution was stopped",
            "ask the operator for a new key (`agentnest tenant key NAME`)");
    lock.lock();
    try {
      out.write(
          ("event: error\ndata: "
                  + new String(Wire.write(Wire.error(e)), StandardCharsets.UTF_8)
                  + "\n\n")
              .getBytes(StandardCharsets.UTF_8));
      out.flush();
    } catch (IOException | RuntimeException gone) {
      // the client left too
    } finally {
      lock.unlock();
    }
  }

  /** An {@code error} event: the error body of the failure, with the status it would have had. */
  static byte[] errorEvent(RuntimeException failure) {
    ApiException api = failure instanceof ApiException a ? a : Failures.of(failure);
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("status", api.status());
    body.put("code", api.code().wire());
    body.put("message", api.getMessage());
    body.put("fix", api.fix());
    body.putAll(api.details());
    return ("event: error\ndata: " + new String(Wire.write(body), StandardCharsets.UTF_8) + "\n\n")
        .getBytes(StandardCharsets.UTF_8);
  }

  private static void write(
      ReentrantLock lock, OutputStream out, AtomicBoolean gone, Runnable leave, byte[] frame) {
    lock.lock();
    try {
      if (gone.get()) {
        return;
      }
      out.write(frame);
      out.flush();
    } catch (IOException | RuntimeException e) {
      leave.run();
    } finally {
      lock.unlock();
    }
  }

  /** Takes a left execution's remaining events so that it runs on to its end (bounded by it). */
  private static void drain(Execution execution, boolean keepOnLeave) {
    if (!keepOnLeave) {
      return;
    }
    try {
      for (ExecEvent ignored : execution) {
        // dropped: nobody reads them
      }
    } catch (RuntimeException ended) {
      // the execution failed or was stopped: nothing more to take
    }
  }

  /**
   * Reads the body up to {@code max} bytes; a declared or actual larger body is a 413 naming the
   * bound, before more is read.
   */
  @Override
  public void close() {
    keepalive.shutdownNow();
    pings.shutdownNow();
  }
}
