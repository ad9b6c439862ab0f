package io.agentnest.internal.files;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.FileInfo;
import io.agentnest.FileOperationException;
import io.agentnest.SandboxFiles;
import io.agentnest.WorkspacePaths;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.redact.RedactingStream;
import io.agentnest.internal.redact.Redactor;
import io.agentnest.internal.support.Bounded;
import io.agentnest.internal.support.Json;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiConsumer;

/** File operations over the agent channel; paths checked here and again by the agent. */
public final class DefaultSandboxFiles implements SandboxFiles {
  public static final int CHUNK = 1 << 20;
  static final long MAX_READ = 64L << 20;
  private static final Duration TIMEOUT = Duration.ofSeconds(60);

  private final AgentChannel channel;
  private final Redactor redactor;

  private final BiConsumer<String, Map<String, ?>> audit;

  public DefaultSandboxFiles(
      AgentChannel channel,
      Redactor redactor,
      BiConsumer<String, Map<String, ?>> audit,
      DeleteCheck deleteCheck) {
    this.channel = channel;
    this.redactor = redactor;
    this.audit = audit;
    this.deleteCheck = deleteCheck;
  }

  /** Asks the approval policy before a deletion; throws when refused. */
  public interface DeleteCheck {
    void check(String path, boolean recursive);
  }

  private final DeleteCheck deleteCheck;

  @Override
  public FileInfo write(String path, byte[] data) {
    String p = WorkspacePaths.checkEntry(path);
    long id = channel.newId();
    CompletableFuture<Frame> done = channel.register(id, f -> {});
    // The agent may refuse early (bad path, no space): sending stops then.
    channel.sendChunks(Ops.OP_FS_WRITE, id, Json.object().put("path", p), data, CHUNK, done);
    JsonNode res = check(channel.await(done, TIMEOUT, "write " + p), p);
    return written(p, res);
  }

  @Override
  public FileInfo write(String path, InputStream in) {
    String p = WorkspacePaths.checkEntry(path);
    long id = channel.newId();
    CompletableFuture<Frame> done = channel.register(id, f -> {});
    byte[] buf = new byte[CHUNK];
    long sent = 0;
    IOException failed = null;
    boolean first = true;
    while (true) {
      int n;
      try {
        n = in.readNBytes(buf, 0, buf.length);
      } catch (IOException e) {
        failed = e;
        n = 0;
      }
      // The agent may refuse early (bad path, no space): sending stops then, and a failed source
      // still closes the file the agent holds open.
      boolean last = n < buf.length || failed != null || done.isDone();
      ObjectNode h = Json.object().put(Ops.OP, Ops.OP_FS_WRITE).put("id", id).put("last", last);
      if (first) {
        h.put("path", p);
        first = false;
      }
      channel.send(h, Arrays.copyOf(buf, n));
      sent += n;
      if (last) {
        break;
      }
    }
    JsonNode res = check(channel.await(done, timeoutFor(sent), "write " + p), p);
    if (failed != null) {
      throw new UncheckedIOException(
          "reading the content for '" + p + "' failed after " + sent + " bytes: " + failed, failed);
    }
    return written(p, res);
  }

  /** Audits a write the agent confirmed and describes the file it left. */
  private FileInfo written(String p, JsonNode res) {
    audit.accept(
        "file.write",
        Map.of("path", redactor.redact(p, (r, n) -> {}), "size", res.path("size").asLong()));
    return new FileInfo(
        name(res.path("path").asText(p)),
        FileInfo.Type.FILE,
        res.path("size").asLong(),
        0644,
        Instant.now());
  }

  /** Chunks in flight between the channel's reader and the caller of a streamed read. */
  private static final int STREAM_CHUNKS = 8;

  /** A streamed read has no cap of its own; the agent's header still wants a number. */
  private static final long UNCAPPED = 1L << 50;

  @Override
  public long read(String path, OutputStream out) {
    String p = WorkspacePaths.checkEntry(path);
    // Data chunks take room (at most STREAM_CHUNKS in flight); the end of the call takes none, so
    // the caller learns of it at once instead of at its next poll.
    LinkedBlockingQueue<byte[]> chunks = new LinkedBlockingQueue<>();
    Semaphore room = new Semaphore(STREAM_CHUNKS);
    byte[] end = new byte[0];
    AtomicBoolean abandoned = new AtomicBoolean();
    ObjectNode h =
        Json.object().put(Ops.OP, Ops.OP_FS_READ).put("path", p).put("max_bytes", UNCAPPED);
    CompletableFuture<Frame> done =
        channel.call(
            h,
            new byte[0],
            f -> {
              if (!f.ev().equals(Ops.EV_DATA)) {
                return;
              }
              // On this channel's reader: no room holds the channel (the sandbox's writes wait)
              // until the caller drains a chunk or gives up.
              try {
                while (!abandoned.get() && !room.tryAcquire(1, TimeUnit.SECONDS)) {
                  // the caller is writing a chunk out
                }
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
              }
              if (!abandoned.get()) {
                chunks.add(f.payload());
              }
            });
    // Every data frame is queued before the call's result arrives on the same reader.
    done.whenComplete((f, e) -> chunks.add(end));
    RedactingStream masked = redactor.stream();
    long written = 0;
    try {
      while (true) {
        byte[] chunk = chunks.poll(TIMEOUT.toNanos(), TimeUnit.NANOSECONDS);
        if (chunk == null) {
          throw new FileOperationException(
              FileOperationException.Reason.HOST_IO,
              "reading '" + p + "' stalled: no data for " + TIMEOUT.toSeconds() + " s");
        }
        if (chunk == end) {
          break;
        }
        room.release();
        byte[] clean = masked.feed(chunk, 0, chunk.length);
        out.write(clean);
        written += clean.length;
      }
      check(channel.await(done, TIMEOUT, "read " + p), p);
      byte[] tail = masked.finish();
      out.write(tail);
      written += tail.length;
    } catch (IOException e) {
      throw new UncheckedIOException(
          "writing '" + p + "' out failed after " + written + " bytes: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new FileOperationException(
          FileOperationException.Reason.HOST_IO, "interrupted while reading '" + p + "'");
    } finally {
      abandoned.set(true);
      room.release(STREAM_CHUNKS);
      chunks.clear();
    }
    audit.accept("file.read", Map.of("path", redactor.redact(p, (r, n) -> {}), "size", written));
    return written;
  }

  private static Duration timeoutFor(long bytes) {
    // As for archives: 60 s plus 1 s per 20 MB.
    return TIMEOUT.plusSeconds(bytes / 20_000_000);
  }

  @Override
  public byte[] read(String path) {
    String p = WorkspacePaths.checkEntry(path);
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    long[] got = {0};
    boolean[] over = {false};
    ObjectNode h =
        Json.object().put(Ops.OP, Ops.OP_FS_READ).put("path", p).put("max_bytes", MAX_READ);
    CompletableFuture<Frame> done =
        channel.call(
            h,
            new byte[0],
            f -> {
              if (!f.ev().equals(Ops.EV_DATA)) {
                return;
              }
              synchronized (buf) {
                got[0] += f.payload().length;
                if (got[0] > MAX_READ) {
                  over[0] = true;
                  return;
                }
                buf.writeBytes(f.payload());
              }
            });
    check(channel.await(done, TIMEOUT, "read " + p), p);
    synchronized (buf) {
      if (over[0]) {
        throw new FileOperationException(
            FileOperationException.Reason.TOO_LARGE,
            "'" + p + "' is larger than the read limit of " + MAX_READ + " bytes");
      }
      audit.accept(
          "file.read", Map.of("path", redactor.redact(p, (r, n) -> {}), "size", buf.size()));
      // File contents leave the sandbox too: secrets in them are masked like output.
      return redactor.redact(buf.toByteArray(), (rule, n) -> {});
    }
  }

  @Override
  public List<FileInfo> list(String path) {
    return list(path, false);
  }

  @Override
  public List<FileInfo> listRecursive(String path) {
    return list(path, true);
  }

  private List<FileInfo> list(String path, boolean recursive) {
    String p = WorkspacePaths.check(path);
    ObjectNode h =
        Json.object().put(Ops.OP, Ops.OP_FS_LIST).put("path", p).put("recursive", recursive);
    JsonNode res = check(channel.request(h, new byte[0], TIMEOUT), p);
    List<FileInfo> out = new ArrayList<>();
    for (JsonNode e : res.path("entries")) {
      out.add(entry(e));
      if (out.size() >= 100_000) {
        break;
      }
    }
    return List.copyOf(out);
  }

  @Override
  public FileInfo stat(String path) {
    String p = WorkspacePaths.check(path);
    JsonNode res =
        check(
            channel.request(
                Json.object().put(Ops.OP, Ops.OP_FS_STAT).put("path", p), new byte[0], TIMEOUT),
            p);
    return entry(res.path("entry"));
  }

  @Override
  public boolean exists(String path) {
    try {
      stat(path);
      return true;
    } catch (FileOperationException e) {
      if (e.reason() == FileOperationException.Reason.NOT_FOUND) {
        return false;
      }
      throw e;
    }
  }

  @Override
  public void delete(String path) {
    delete(path, false);
  }

  @Override
  public void deleteRecursive(String path) {
    delete(path, true);
  }

  private void delete(String path, boolean recursive) {
    String p = WorkspacePaths.checkEntry(path);
    deleteCheck.check(p, recursive);
    ObjectNode h =
        Json.object().put(Ops.OP, Ops.OP_FS_DELETE).put("path", p).put("recursive", recursive);
    check(channel.request(h, new byte[0], TIMEOUT), p);
    audit.accept(
        "file.delete", Map.of("path", redactor.redact(p, (r, n) -> {}), "recursive", recursive));
  }

  @Override
  public FileInfo mkdir(String path) {
    String p = WorkspacePaths.checkEntry(path);
    check(
        channel.request(
            Json.object().put(Ops.OP, Ops.OP_FS_MKDIR).put("path", p), new byte[0], TIMEOUT),
        p);
    return stat(p);
  }

  private JsonNode check(Frame f, String path) {
    if (f.ev().equals(Ops.EV_ERROR)) {
      String code = Bounded.text(f.header().path("code").asText("IO"), 64);
      String msg =
          redactor.redact(Bounded.text(f.header().path("message").asText(""), 4096), (r, n) -> {});
      throw new FileOperationException(
          FileOperationException.Reason.fromWire(code),
          msg.isEmpty() ? code + " on '" + path + "'" : msg);
    }
    return f.header();
  }

  /**
   * A file name the sandbox reports. Names are the sandbox's to choose, so one can carry a secret
   * (a file named after it) into a listing, a log or an export directory: masked like output.
   */
  private String name(String reported) {
    return redactor.redact(Bounded.text(reported, WorkspacePaths.MAX_PATH_BYTES), (r, n) -> {});
  }

  private FileInfo entry(JsonNode e) {
    FileInfo.Type type;
    try {
      type = FileInfo.Type.valueOf(e.path("type").asText("other").toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException ex) {
      type = FileInfo.Type.OTHER;
    }
    return new FileInfo(
        name(e.path("path").asText("")),
        type,
        e.path("size").asLong(0),
        e.path("mode").asInt(0),
        Instant.ofEpochMilli(e.path("mtime_ms").asLong(0)));
  }
}
