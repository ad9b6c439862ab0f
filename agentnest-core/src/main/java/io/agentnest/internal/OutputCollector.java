package io.agentnest.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.ExecError;
import io.agentnest.ExecResult;
import io.agentnest.Limit;
import io.agentnest.OutputChunk;
import io.agentnest.RichOutput;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Gathers one call's streamed frames into an {@link ExecResult}. The host enforces its own output
 * bound (the agent's cap plus slack), because the agent's word is not trusted.
 */
final class OutputCollector implements Consumer<Frame> {
  private static final int SLACK = 256 * 1024;
  private static final int MAX_RICH_ITEMS = 16;
  private static final long MAX_RICH_BYTES = 32L << 20;

  private final long hostCap;
  private final @Nullable Consumer<OutputChunk> listener;
  private final ByteArrayOutputStream stdout = new ByteArrayOutputStream();
  private final ByteArrayOutputStream stderr = new ByteArrayOutputStream();
  private final List<RichOutput> rich = new ArrayList<>();
  private long richBytes;
  private long received;
  private boolean hostTruncated;

  OutputCollector(long maxOutput, @Nullable Consumer<OutputChunk> listener) {
    this.hostCap = maxOutput > Long.MAX_VALUE - SLACK ? Long.MAX_VALUE : maxOutput + SLACK;
    this.listener = listener;
  }

  @Override
  public synchronized void accept(Frame f) {
    switch (f.ev()) {
      case "out" -> {
        byte[] data = f.payload();
        long room = hostCap - received;
        received += data.length;
        if (room <= 0) {
          hostTruncated = true;
          return;
        }
        int n = (int) Math.min(room, data.length);
        if (n < data.length) {
          hostTruncated = true;
        }
        boolean err = f.header().path("s").asText().equals("e");
        (err ? stderr : stdout).write(data, 0, n);
        if (listener != null) {
          byte[] slice = n == data.length ? data : java.util.Arrays.copyOf(data, n);
          listener.accept(
              new OutputChunk(err ? OutputChunk.Stream.STDERR : OutputChunk.Stream.STDOUT, slice));
        }
      }
      case "rich" -> {
        byte[] data = f.payload();
        if (rich.size() < MAX_RICH_ITEMS && richBytes + data.length <= MAX_RICH_BYTES) {
          richBytes += data.length;
          String mime = f.header().path("mime").asText("application/octet-stream");
          rich.add(new RichOutput(mime.length() > 100 ? mime.substring(0, 100) : mime, data));
        }
      }
      default -> {}
    }
  }

  synchronized ExecResult toResult(JsonNode res, boolean python) {
    ExecError error = null;
    JsonNode e = res.path("error");
    if (e.isObject()) {
      error =
          new ExecError(
              Bounded.text(e.path("name").asText("Error"), 200),
              Bounded.text(e.path("value").asText(""), 1 << 20),
              Bounded.text(e.path("traceback").asText(""), 1 << 20));
    }
    int exit;
    if (python) {
      exit = error == null ? 0 : 1;
    } else {
      exit = res.path("exit_code").asInt(-1);
    }
    String resultText = null;
    if (res.path("result").isTextual()) {
      resultText = Bounded.text(res.path("result").asText(), 1 << 20);
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
    if (!python && res.path("error").isTextual() && error == null) {
      // The command could not be started at all (e.g. not found).
      stderr.writeBytes(
          (Bounded.text(res.path("error").asText(), 4096) + "\n").getBytes(StandardCharsets.UTF_8));
    }
    long ms = Math.max(0, res.path("duration_ms").asLong(0));
    return new ExecResult(
        exit,
        stdout.toString(StandardCharsets.UTF_8),
        stderr.toString(StandardCharsets.UTF_8),
        resultText,
        rich,
        error,
        Duration.ofMillis(ms),
        limit,
        res.path("truncated").asBoolean(false) || hostTruncated,
        res.path("state_lost").asBoolean(false));
  }
}
