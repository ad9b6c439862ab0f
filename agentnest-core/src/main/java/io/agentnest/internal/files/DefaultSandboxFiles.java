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
import io.agentnest.internal.redact.Redactor;
import io.agentnest.internal.support.Bounded;
import io.agentnest.internal.support.Json;
import java.io.ByteArrayOutputStream;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
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
