package io.agentnest.server.http;

import io.agentnest.FileInfo;
import io.agentnest.SandboxFiles;
import io.javalin.http.Context;
import java.io.BufferedOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/**
 * File bodies in and out of a sandbox without holding them in memory (issue 42, MEDIUM 6: eight
 * archive downloads of one tenant ran the server out of memory). Each passes through a spool file
 * on the server's disk, counted against the spool budget ({@link MemoryBudget#SPOOL_ATTR}), and
 * memory holds a chunk, not the file. Spooling rather than piping straight through is what keeps
 * failures honest: the answer's status and length are known before its first byte, so a failure
 * midway is an error status, never a shorter file a client takes for the whole; and an upload that
 * fails midway leaves the sandbox's old file as it was.
 */
public final class Transfers {
  /** Room for redaction's masks, which may be longer than the secrets they replace. */
  private static final long SLACK = 64 << 10;

  private Transfers() {}

  /** Answers with the regular file at {@code path} (secrets masked), at most {@code max} bytes. */
  public static void download(Context ctx, SandboxFiles files, String path, long max) {
    FileInfo st = files.stat(path);
    if (st.size() > max) {
      throw tooLarge(
          "'" + Escape.id(path) + "' is " + st.size() + " bytes",
          max,
          "fetch it in parts (split it in the sandbox), or ask the operator to raise max_body");
    }
    long cap = Math.min(max, 2 * st.size() + SLACK);
    MemoryBudget.reserveSpool(ctx, cap, "a file download");
    Path spool = spoolFile();
    try {
      try (OutputStream out = new Capped(Files.newOutputStream(spool), cap)) {
        files.read(path, out);
      } catch (UncheckedIOException e) {
        throw overOr(e, "'" + Escape.id(path) + "' grew while it was read", max);
      }
      serve(ctx, spool, "application/octet-stream");
    } catch (IOException e) {
      throw spoolFailed(e);
    } finally {
      deleteQuietly(spool);
    }
  }

  /** Answers with a tar of {@code paths} (regular files, secrets masked), at most {@code max}. */
  public static void archive(Context ctx, SandboxFiles files, List<String> paths, long max) {
    long declared = 0;
    for (String p : paths) {
      declared += files.stat(p).size();
    }
    if (declared > max) {
      throw tooLarge(
          "the files are " + declared + " bytes together", max, "export fewer at a time");
    }
    long cap = Math.min(max, 2 * declared + SLACK);
    // Each file is staged on its own (its size goes first in the tar), then the tar itself.
    MemoryBudget.reserveSpool(ctx, 2 * cap + 1024L * paths.size(), "an archive");
    Path part = spoolFile();
    Path tar = spoolFile();
    try {
      try (TarArchiveOutputStream out =
          new TarArchiveOutputStream(
              new BufferedOutputStream(Files.newOutputStream(tar)), "UTF-8")) {
        out.setLongFileMode(TarArchiveOutputStream.LONGFILE_POSIX);
        long total = 0;
        for (String p : paths) {
          try (OutputStream o = new Capped(Files.newOutputStream(part), cap - total)) {
            files.read(p, o);
          } catch (UncheckedIOException e) {
            throw overOr(e, "the files grew while they were read", max);
          }
          long n = Files.size(part);
          total += n;
          TarArchiveEntry entry = new TarArchiveEntry(p);
          entry.setSize(n);
          entry.setMode(0644);
          out.putArchiveEntry(entry);
          Files.copy(part, out);
          out.closeArchiveEntry();
        }
      }
      serve(ctx, tar, "application/x-tar");
    } catch (IOException e) {
      throw spoolFailed(e);
    } finally {
      deleteQuietly(part);
      deleteQuietly(tar);
    }
  }

  /** Writes the request body (gunzipped when {@code gzip}) to {@code path}, at most {@code max}. */
  public static FileInfo upload(
      Context ctx, SandboxFiles files, String path, long max, boolean gzip) {
    Path body = body(ctx, max, "an upload body");
    Path plain = null;
    try {
      if (gzip) {
        plain = spoolFile();
        MemoryBudget.reserveSpool(ctx, max, "a decompressed upload");
        try (InputStream in = new GZIPInputStream(Files.newInputStream(body));
            OutputStream out = new Capped(Files.newOutputStream(plain), max)) {
          in.transferTo(out);
        } catch (Capped.Over e) {
          throw tooLarge("the decompressed body is over " + max + " bytes", max, "send less");
        } catch (IOException e) {
          throw ApiException.badRequest(
              ErrorCode.INVALID_FIELD,
              "the gzip body could not be decompressed: " + e.getMessage(),
              "send valid gzip, or no Content-Encoding");
        }
      }
      try (InputStream in = Files.newInputStream(plain != null ? plain : body)) {
        return files.write(path, in);
      }
    } catch (IOException e) {
      throw spoolFailed(e);
    } finally {
      deleteQuietly(body);
      if (plain != null) {
        deleteQuietly(plain);
      }
    }
  }

  /**
   * The request body in a spool file the caller deletes, at most {@code max} bytes: a declared
   * larger body is refused before it is read, a longer one when it passes the bound.
   */
  public static Path body(Context ctx, long max, String what) {
    Bodies.refuseDeclaredOver(ctx, max);
    long declared = ctx.req().getContentLengthLong();
    MemoryBudget.reserveSpool(ctx, declared >= 0 ? declared : max, what);
    Path spool = spoolFile();
    boolean kept = false;
    try (InputStream in = ctx.req().getInputStream();
        OutputStream out = new Capped(Files.newOutputStream(spool), max)) {
      in.transferTo(out);
      kept = true;
      return spool;
    } catch (Capped.Over e) {
      throw Bodies.tooLarge(max + 1, max);
    } catch (IOException e) {
      throw ApiException.badRequest(
          ErrorCode.MALFORMED_JSON, "the body could not be read: " + e.getMessage(), "send again");
    } finally {
      if (!kept) {
        deleteQuietly(spool);
      }
    }
  }

  /**
   * Answers with the spool file: opened, then unlinked (the open file stays readable until the
   * answer is written and the stream closed), so nothing is left on disk whatever happens next.
   */
  private static void serve(Context ctx, Path spool, String type) throws IOException {
    long size = Files.size(spool);
    InputStream in = Files.newInputStream(spool);
    Files.delete(spool);
    ctx.status(200);
    ctx.contentType(type);
    // Sent as stored, so the length is known and stated: a compressed answer would no longer
    // match it (and the files are the sandbox's, often compressed already).
    ctx.disableCompression();
    ctx.header("Content-Length", Long.toString(size));
    ctx.result(in);
  }

  private static Path spoolFile() {
    try {
      return Files.createTempFile("agentnest-transfer-", ".spool");
    } catch (IOException e) {
      throw spoolFailed(e);
    }
  }

  public static void deleteQuietly(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException ignored) {
      // a temporary file; the next start's temp directory cleanup takes it
    }
  }

  private static RuntimeException overOr(UncheckedIOException e, String grew, long max) {
    if (e.getCause() instanceof Capped.Over) {
      return tooLarge(grew, max, "read it again, once the sandbox has finished writing it");
    }
    return new IllegalStateException("the transfer failed: " + e.getMessage(), e);
  }

  private static ApiException tooLarge(String what, long max, String fix) {
    return new ApiException(
        413,
        ErrorCode.BODY_TOO_LARGE,
        what + ", over the server's bound of " + max + " bytes",
        fix,
        Map.of("limit", max));
  }

  private static ApiException spoolFailed(IOException e) {
    return new ApiException(
        503,
        ErrorCode.QUOTA,
        "the server could not stage the transfer on its disk: " + e.getMessage(),
        "retry later; the operator checks free space in the server's temporary directory",
        Map.of("quota", "spool_budget"));
  }

  /** Counts what passes and fails once more than {@code max} bytes would have. */
  private static final class Capped extends FilterOutputStream {
    static final class Over extends IOException {
      private static final long serialVersionUID = 1L;

      Over(long max) {
        super("more than " + max + " bytes");
      }
    }

    private final long max;
    private long n;

    Capped(OutputStream out, long max) {
      super(out);
      this.max = max;
    }

    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      if (n + len > max) {
        throw new Over(max);
      }
      n += len;
      out.write(b, off, len);
    }
  }
}
