package io.agentnest;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Files in the sandbox workspace. Paths are relative to the workspace; absolute paths, {@code ..}
 * and symlinks leading outside are refused with {@link FileOperationException} ({@code BAD_PATH}).
 *
 * <pre>{@code
 * sandbox.files().write("data/in.csv", "a,b\n1,2\n");
 * String text = sandbox.files().readString("data/in.csv");
 * }</pre>
 */
public interface SandboxFiles {
  /** Writes (creating parents, replacing an existing file). */
  FileInfo write(String path, byte[] data);

  default FileInfo write(String path, String text) {
    return write(path, text.getBytes(StandardCharsets.UTF_8));
  }

  /** Reads a regular file (up to 64 MiB). */
  byte[] read(String path);

  /**
   * Writes what {@code in} yields until its end, chunk by chunk: host memory holds one chunk, not
   * the file, so a file of any size within the workspace's bounds can be sent. A failure while
   * reading {@code in} leaves a partial file in the workspace; stage the content first when the old
   * file must survive it.
   *
   * @throws UncheckedIOException when {@code in} fails
   */
  default FileInfo write(String path, InputStream in) {
    try {
      return write(path, in.readAllBytes());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Streams a regular file into {@code out} as it arrives, secrets masked as by {@link
   * #read(String)}, with no size limit of its own: host memory holds a few chunks, not the file.
   * When {@code out} is slow, the sandbox's channel waits for it (as a {@link Backpressure#BLOCK}
   * stream does).
   *
   * @return the bytes written to {@code out}
   * @throws UncheckedIOException when {@code out} fails; the transfer stops there
   */
  default long read(String path, OutputStream out) {
    byte[] data = read(path);
    try {
      out.write(data);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return data.length;
  }

  default String readString(String path) {
    return new String(read(path), StandardCharsets.UTF_8);
  }

  /** Entries directly inside a directory; {@code ""} is the workspace root. */
  List<FileInfo> list(String path);

  /** Every entry below a directory. */
  List<FileInfo> listRecursive(String path);

  FileInfo stat(String path);

  boolean exists(String path);

  /** Deletes a file or an empty directory. */
  void delete(String path);

  /** Deletes a file or a directory with everything in it. */
  void deleteRecursive(String path);

  /** Creates a directory and its parents. */
  FileInfo mkdir(String path);
}
