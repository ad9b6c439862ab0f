package io.agentnest.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Whether a standard stream of this process is a terminal (Java 17 cannot ask per stream). */
final class Terminals {
  private Terminals() {}

  /** Linux: where {@code /proc/self/fd/N} points; elsewhere: whether there is a console. */
  static boolean isTerminal(int fd) {
    try {
      String target = Files.readSymbolicLink(Path.of("/proc/self/fd/" + fd)).toString();
      return target.startsWith("/dev/pts/")
          || target.startsWith("/dev/tty")
          || target.equals("/dev/console");
    } catch (IOException | UnsupportedOperationException | SecurityException e) {
      return System.console() != null;
    }
  }
}
