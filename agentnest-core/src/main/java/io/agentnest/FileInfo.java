package io.agentnest;

import java.time.Instant;

/**
 * One entry of the sandbox workspace.
 *
 * @param path path relative to the workspace root
 * @param type file, dir, symlink or other
 * @param size size in bytes
 * @param mode permission bits
 * @param modified last modification time
 */
public record FileInfo(String path, Type type, long size, int mode, Instant modified) {
  /** Kind of entry. */
  public enum Type {
    FILE,
    DIR,
    SYMLINK,
    OTHER
  }

  public boolean isDirectory() {
    return type == Type.DIR;
  }
}
