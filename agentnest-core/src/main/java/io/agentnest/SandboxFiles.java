package io.agentnest;

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
