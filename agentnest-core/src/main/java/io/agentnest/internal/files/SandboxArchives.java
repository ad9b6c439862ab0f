package io.agentnest.internal.files;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.AgentNestException;
import io.agentnest.FileOperationException;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.Frame;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.redact.Redactor;
import io.agentnest.internal.support.Bounded;
import io.agentnest.internal.support.Json;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * tar streams out of and into a sandbox over its channel (agent ops {@code tar_out}, {@code
 * tar_in}): the transport of fork, snapshots, artifacts and uploads. What comes out is a hostile
 * archive: callers that unpack it on the host must check every entry; the agent checks every entry
 * it unpacks.
 */
public final class SandboxArchives implements ArchiveTransport {
  /** What the agent reported about an archive it wrote or read. */
  public record Summary(long bytes, long entries, List<String> skipped) {}

  /** Archive roots inside a sandbox. */
  public static final String WORKSPACE = "/workspace";

  public static final String TMP = "/tmp";

  private final AgentChannel channel;
  private final String sandboxId;
  private final Redactor redactor;

  public SandboxArchives(AgentChannel channel, String sandboxId, Redactor redactor) {
    this.channel = channel;
    this.sandboxId = sandboxId;
    this.redactor = redactor;
  }

  /**
   * Streams a tar of {@code paths} (relative to {@code root}; empty for all of it) into {@code
   * sink}. {@code filesOnly} leaves out everything but regular files (and reports them skipped).
   */
  @Override
  public Summary tarOut(
      String root, List<String> paths, boolean filesOnly, long maxBytes, OutputStream sink) {
    ObjectNode h =
        Json.object()
            .put(Ops.OP, Ops.OP_TAR_OUT)
            .put("root", root)
            .put("mode", filesOnly ? "files" : "full")
            .put("max_bytes", maxBytes);
    paths.forEach(h.putArray("paths")::add);
    long[] got = {0};
    IOException[] failed = {null};
    CompletableFuture<Frame> done =
        channel.call(
            h,
            new byte[0],
            f -> {
              if (!f.ev().equals(Ops.EV_DATA) || failed[0] != null) {
                return;
              }
              got[0] += f.payload().length;
              if (got[0] > maxBytes) {
                failed[0] = new IOException("more than " + maxBytes + " bytes");
                return;
              }
              try {
                sink.write(f.payload());
              } catch (IOException e) {
                failed[0] = e;
              }
            });
    Frame f = channel.await(done, timeoutFor(maxBytes), "tar_out " + root);
    JsonNode r = check(f, root);
    if (failed[0] != null) {
      throw new AgentNestException(
          "copying " + root + " out of sandbox " + sandboxId + " failed: " + failed[0].getMessage(),
          failed[0]);
    }
    List<String> skipped = new ArrayList<>();
    r.path("skipped")
        .forEach(
            s -> {
              if (skipped.size() < 1000) {
                skipped.add(
                    redactor.redact(Bounded.text(s.path("path").asText(), 1024), (x, n) -> {})
                        + ": "
                        + Bounded.text(s.path("reason").asText(), 200));
              }
            });
    return new Summary(got[0], r.path("entries").asLong(), skipped);
  }

  /**
   * Unpacks the tar read from {@code in} under {@code root}/{@code subPath}. {@code strict} also
   * refuses symlinks pointing outside, names that differ only in normalisation or case, and
   * group/other write bits.
   */
  @Override
  public Summary tarIn(String root, String subPath, InputStream in, boolean strict, long maxBytes)
      throws IOException {
    long id = channel.newId();
    CompletableFuture<Frame> done = channel.register(id, f -> {});
    byte[] buf = new byte[DefaultSandboxFiles.CHUNK];
    boolean first = true;
    long sent = 0;
    while (true) {
      int n = in.readNBytes(buf, 0, buf.length);
      boolean last = n < buf.length;
      sent += n;
      if (sent > maxBytes + (1 << 20)) {
        // The archive itself is over the cap: stop sending; the agent refuses on its own count.
        last = true;
      }
      ObjectNode h = Json.object().put(Ops.OP, Ops.OP_TAR_IN).put("id", id).put("last", last);
      if (first) {
        h.put("root", root)
            .put("path", subPath)
            .put("strict", strict)
            .put("max_bytes", maxBytes)
            .put("max_entries", 100_000);
        first = false;
      }
      channel.send(h, Arrays.copyOf(buf, n));
      if (last || done.isDone()) {
        if (!last) {
          channel.send(
              Json.object().put(Ops.OP, Ops.OP_TAR_IN).put("id", id).put("last", true),
              new byte[0]);
        }
        break;
      }
    }
    JsonNode r = check(channel.await(done, timeoutFor(maxBytes), "tar_in " + root), root);
    if (sent > maxBytes + (1 << 20)) {
      throw new FileOperationException(
          FileOperationException.Reason.TOO_LARGE,
          "the archive is larger than the cap of " + maxBytes + " bytes");
    }
    return new Summary(r.path("bytes").asLong(), r.path("entries").asLong(), List.of());
  }

  private static Duration timeoutFor(long bytes) {
    // Generous: 60 s plus 1 s per 20 MB.
    return Duration.ofSeconds(60 + Math.min(bytes, 1L << 40) / (20L << 20));
  }

  private JsonNode check(Frame f, String what) {
    if (f.ev().equals(Ops.EV_ERROR)) {
      String code = Bounded.text(f.header().path("code").asText("IO"), 64);
      String msg =
          redactor.redact(Bounded.text(f.header().path("message").asText(""), 2000), (r, n) -> {});
      throw new FileOperationException(
          FileOperationException.Reason.fromWire(code),
          msg.isEmpty() ? code + " on '" + what + "'" : msg);
    }
    return f.header();
  }
}
