package io.agentnest.docker.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.OptionalInt;

/**
 * Who may reach a sandbox's bulk directory on the host: its owner (the host process, which listens
 * there during a fork) and the sandbox's own group, nobody else. The directory was mode 0755 with a
 * 0666 socket in it, so any local user could connect during a fork and end it.
 *
 * <p>Mode 0750, group = the sandbox's gid: the sandbox (which sees the directory read-only)
 * traverses it through the group bits; the socket in it is 0660 with the same group ({@code
 * BulkLink}). Only processes with that gid (on a stock host, {@code nogroup}) or root can connect,
 * and they still need the transfer's token; none of them can replace the socket.
 */
final class BulkDirAccess {
  static final int MODE = 0750;

  private BulkDirAccess() {}

  /** The gid of a {@code uid:gid} user, empty when there is none. */
  static OptionalInt gidOf(String user) {
    String[] ug = user.split(":");
    if (ug.length != 2) {
      return OptionalInt.empty();
    }
    try {
      return OptionalInt.of(Integer.parseInt(ug[1].strip()));
    } catch (NumberFormatException e) {
      return OptionalInt.empty();
    }
  }

  /** Gives {@code dir} to the sandbox's group with mode 0750; false when that cannot be done. */
  static boolean restrict(Path dir, String user) {
    OptionalInt gid = gidOf(user);
    if (gid.isEmpty()) {
      return false; // without a known gid, the directory cannot be opened to the sandbox alone
    }
    try {
      Files.setAttribute(dir, "unix:gid", gid.getAsInt(), LinkOption.NOFOLLOW_LINKS);
      Files.setAttribute(dir, "unix:mode", MODE, LinkOption.NOFOLLOW_LINKS);
      return restricted(dir, user);
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  /**
   * Whether {@code dir} is closed to everyone but its owner and the sandbox's group (a directory
   * made before this rule is not: its sandbox then forks over the agent channel).
   */
  static boolean restricted(Path dir, String user) {
    OptionalInt gid = gidOf(user);
    if (gid.isEmpty()) {
      return false;
    }
    try {
      int mode = (Integer) Files.getAttribute(dir, "unix:mode", LinkOption.NOFOLLOW_LINKS);
      int group = (Integer) Files.getAttribute(dir, "unix:gid", LinkOption.NOFOLLOW_LINKS);
      return (mode & 07777) == MODE && group == gid.getAsInt();
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }
}
