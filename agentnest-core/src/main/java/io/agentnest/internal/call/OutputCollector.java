package io.agentnest.internal.call;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.ExecError;
import io.agentnest.ExecEvent;
import io.agentnest.ExecResult;
import io.agentnest.Limit;
import io.agentnest.OutputChunk;
import io.agentnest.RichOutput;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.redact.Redactor;
import io.agentnest.internal.redact.TwoStreamRedactor;
import io.agentnest.internal.support.Bounded;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Gathers one call's streamed frames into an {@link ExecResult}. Everything passes the redactor
 * before anyone sees it. The host enforces its own output bound (the agent's cap plus slack),
 * because the agent's word is not trusted.
 */
public final class OutputCollector implements Consumer<Frame> {
  /** What the host lets through past the cap the agent was given, before it cuts the output. */
  static final int SLACK = 256 * 1024;

  private static final int MAX_RICH_ITEMS = 16;
  private static final long MAX_RICH_BYTES = 32L << 20;

  private final long hostCap;
  private final @Nullable Consumer<OutputChunk> listener;
  private final @Nullable Consumer<ExecEvent> events;
  private final Redactor redactor;
  private final TwoStreamRedactor streams;
  private final ByteArrayOutputStream stdout = new ByteArrayOutputStream();
  private final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
  private final List<RichOutput> rich = new ArrayList<>();
  private final Map<String, Integer> redactions = new LinkedHashMap<>();
  private long richBytes;
  private long received;
  private long delivered;
  private boolean hostTruncated;
  private boolean truncationAnnounced;

  public OutputCollector(long maxOutput, @Nullable Consumer<OutputChunk> listener) {
    this(maxOutput, listener, Redactor.defaults(), null);
  }

  public OutputCollector(
      long maxOutput,
      @Nullable Consumer<OutputChunk> listener,
      Redactor redactor,
      @Nullable Consumer<ExecEvent> events) {
    this.hostCap = maxOutput > Long.MAX_VALUE - SLACK ? Long.MAX_VALUE : maxOutput + SLACK;
    this.listener = listener;
    this.events = events;
    this.redactor = redactor;
    this.streams = new TwoStreamRedactor(redactor);
  }

  @Override
  public synchronized void accept(Frame f) {
    switch (f.ev()) {
      case Ops.EV_OUT -> {
        byte[] data = f.payload();
        long room = hostCap - received;
        received += data.length;
        if (room <= 0) {
          truncate();
          return;
        }
        int n = (int) Math.min(room, data.length);
        boolean err = f.header().path("s").asText().equals("e");
        deliver(streams.feed(err, data, 0, n));
        if (n < data.length) {
          truncate();
        }
      }
      case Ops.EV_RICH -> {
        byte[] data = f.payload();
        if (rich.size() < MAX_RICH_ITEMS && richBytes + data.length <= MAX_RICH_BYTES) {
          richBytes += data.length;
          RichOutputs.Redacted ro =
              RichOutputs.redacted(
                  redactor, f.header().path("mime").asText("application/octet-stream"), data);
          ro.redactions().forEach(this::count);
          rich.add(ro.output());
          if (events != null) {
            events.accept(new ExecEvent.Rich(ro.output()));
          }
        }
      }
      default -> {}
    }
  }

  private void deliver(List<TwoStreamRedactor.Chunk> chunks) {
    for (TwoStreamRedactor.Chunk c : chunks) {
      deliver(c.stderr(), c.data());
    }
  }

  private void deliver(boolean err, byte[] safe) {
    if (safe.length == 0) {
      return;
    }
    (err ? stderr : stdout).writeBytes(safe);
    delivered += safe.length;
    OutputChunk chunk =
        new OutputChunk(err ? OutputChunk.Stream.STDERR : OutputChunk.Stream.STDOUT, safe);
    if (listener != null) {
      listener.accept(chunk);
    }
    if (events != null) {
      events.accept(new ExecEvent.Output(chunk));
    }
  }

  private void truncate() {
    hostTruncated = true;
    announceTruncation();
  }

  private void announceTruncation() {
    if (!truncationAnnounced) {
      truncationAnnounced = true;
      if (events != null) {
        events.accept(new ExecEvent.Truncated(delivered));
      }
    }
  }

  private void count(String rule, int n) {
    redactions.merge(rule, n, Integer::sum);
  }

  private String clean(String s, int max) {
    return Bounded.text(redactor.redact(s, this::count), max);
  }

  public synchronized ExecResult toResult(JsonNode res, boolean python) {
    deliver(streams.finish());
    streams.counts().forEach(this::count);
    ExecError error = null;
    JsonNode e = res.path("error");
    if (e.isObject()) {
      error =
          new ExecError(
              clean(e.path("name").asText("Error"), 200),
              clean(e.path("value").asText(""), 1 << 20),
              clean(e.path("traceback").asText(""), 1 << 20));
    }
    int exit = python ? (error == null ? 0 : 1) : res.path("exit_code").asInt(-1);
    String resultText = null;
    if (res.path("result").isTextual()) {
      resultText = clean(res.path("result").asText(), 1 << 20);
    }
    Limit limit = null;
    String l = res.path("limit").asText("");
    if (!l.isEmpty()) {
      try {
        limit = Limit.valueOf(l.toUpperCase(Locale.ROOT));
      } catch (IllegalArgumentException ignored) {
        limit = null;
      }
    }
    if (limit == null && hostTruncated) {
      limit = Limit.OUTPUT;
    }
    boolean truncated = res.path("truncated").asBoolean(false) || hostTruncated;
    if (truncated) {
      announceTruncation();
    }
    if (!python && res.path("error").isTextual() && error == null) {
      // The command could not be started at all (e.g. not found).
      deliver(
          true, (clean(res.path("error").asText(), 4096) + "\n").getBytes(StandardCharsets.UTF_8));
    }
    long ms = Math.max(0, res.path("duration_ms").asLong(0));
    // A reader of the result may read one stream's text right after the other's.
    TwoStreamRedactor.Joined joined = streams.joined(stdout.toByteArray(), stderr.toByteArray());
    joined.counts().forEach(this::count);
    return new ExecResult(
        exit,
        new String(joined.stdout(), StandardCharsets.UTF_8),
        new String(joined.stderr(), StandardCharsets.UTF_8),
        resultText,
        rich,
        error,
        Duration.ofMillis(ms),
        limit,
        truncated,
        res.path("state_lost").asBoolean(false),
        redactions);
  }
}
