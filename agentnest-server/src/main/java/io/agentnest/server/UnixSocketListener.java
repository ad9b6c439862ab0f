package io.agentnest.server;

import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.Set;
import jdk.net.ExtendedSocketOptions;
import jdk.net.UnixDomainPrincipal;
import org.eclipse.jetty.server.ConnectionFactory;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.unixdomain.server.UnixDomainServerConnector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The local engine's listener: {@code /v1} on a Unix domain socket that only its owner can reach.
 * Two locks, each enough alone: the socket's directory is {@code 0700} and owned by this user (so
 * no other user can even connect), and every accepted connection's peer credentials ({@code
 * SO_PEERCRED}, set by the kernel, not by the client) must name this process's user, checked before
 * a byte of the request is read.
 */
final class UnixSocketListener {
  private static final Logger LOG = LoggerFactory.getLogger(UnixSocketListener.class);

  private static final Set<PosixFilePermission> OWNER_ONLY =
      PosixFilePermissions.fromString("rwx------");

  private UnixSocketListener() {}

  /**
   * Makes the socket's directory (or checks the one that is there) and a connector on {@code
   * socket} in it. A stale socket file of an engine that died is removed; a live one is not ours to
   * take (the caller checks that no engine answers there first).
   */
  static UnixDomainServerConnector connector(
      Server server, Path socket, ConnectionFactory... factories) {
    Path dir = socket.toAbsolutePath().getParent();
    if (dir == null) {
      throw new IllegalArgumentException("engine socket " + socket + " has no directory");
    }
    ownerOnlyDirectory(dir);
    try {
      Files.deleteIfExists(socket);
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "cannot remove the stale engine socket " + socket + ": " + e.getMessage(), e);
    }
    String owner = currentUser();
    UnixDomainServerConnector c =
        new UnixDomainServerConnector(server, factories) {
          @Override
          protected void configure(SocketChannel channel) throws IOException {
            String peer = peerUser(channel);
            if (!owner.equals(peer)) {
              LOG.warn("refused a connection to the engine socket from user {}", peer);
              channel.close();
              throw new IOException("engine socket: peer user " + peer + " is not " + owner);
            }
            super.configure(channel);
          }
        };
    c.setUnixDomainPath(socket);
    return c;
  }

  /**
   * Creates {@code dir} as {@code 0700}, or refuses one that others could enter or that is not
   * ours.
   */
  static void ownerOnlyDirectory(Path dir) {
    try {
      if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
        Files.createDirectories(dir.getParent() == null ? dir : dir.getParent());
        Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(OWNER_ONLY));
      }
      if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
        throw new IllegalArgumentException(
            dir + " is not a directory (a symbolic link is refused): remove it and start again");
      }
      UserPrincipal owner = Files.getOwner(dir, LinkOption.NOFOLLOW_LINKS);
      if (!owner.getName().equals(currentUser())) {
        throw new IllegalArgumentException(
            dir
                + " belongs to "
                + owner.getName()
                + ", not to "
                + currentUser()
                + ": the engine's socket directory must be the user's own; remove it or set"
                + " AGENTNEST_HOME to a directory of yours");
      }
      Set<PosixFilePermission> perms =
          Files.getPosixFilePermissions(dir, LinkOption.NOFOLLOW_LINKS);
      if (!OWNER_ONLY.containsAll(perms)) {
        // Tightened rather than refused: it is the user's own directory, and 0700 is what it must
        // be.
        Files.setPosixFilePermissions(dir, OWNER_ONLY);
      }
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "cannot prepare the engine's socket directory " + dir + ": " + e.getMessage(), e);
    }
  }

  static String currentUser() {
    try {
      return Files.getOwner(Path.of("/proc/self")).getName();
    } catch (IOException | UnsupportedOperationException e) {
      return System.getProperty("user.name", "?");
    }
  }

  private static String peerUser(SocketChannel channel) {
    try {
      UnixDomainPrincipal p = channel.getOption(ExtendedSocketOptions.SO_PEERCRED);
      return p.user().getName();
    } catch (IOException | UnsupportedOperationException e) {
      // No credentials: never taken for the owner.
      return "unknown (" + e.getClass().getSimpleName() + ")";
    }
  }
}
