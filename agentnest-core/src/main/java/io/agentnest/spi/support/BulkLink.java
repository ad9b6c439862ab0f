package io.agentnest.spi.support;

import io.agentnest.AgentNestException;
import java.io.Closeable;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The host end of a sandbox's bulk link: a unix socket in the directory the sandbox sees read-only
 * at {@code /run/agentnest}, listened on only while a fork moves state (or, as {@code agent.sock},
 * until the agent connected its channel at start). The engine's stdio path carries about 170 MB/s;
 * a local socket several times that, so a 100 MB session no longer costs a second each way.
 *
 * <p>The socket is mode 0660 with the directory's group, which the backend sets to the sandbox's
 * gid: other local users cannot connect. Anything in the sandbox may connect while the host
 * listens. A connection takes part only if its first line is the token the host just gave the agent
 * for this transfer; others are closed (at most {@value #MAX_STRANGERS}), and a connection that
 * sends no token in time is dropped.
 */
public final class BulkLink implements Closeable {
  static final String SOCKET = "bulk.sock";
  static final int MAX_STRANGERS = 16;
  private static final Duration TOKEN_WAIT = Duration.ofSeconds(5);
  private static final SecureRandom RANDOM = new SecureRandom();

  private final ServerSocketChannel server;
  private final Path socket;
  private final long tokenWaitNanos;
  private final Set<String> expected = ConcurrentHashMap.newKeySet();
  private final Map<String, SocketChannel> arrived = new HashMap<>();
  private int strangers;

  private BulkLink(ServerSocketChannel server, Path socket, Duration tokenWait) {
    this.server = server;
    this.socket = socket;
    this.tokenWaitNanos = tokenWait.toNanos();
  }

  /** Listens in {@code dir} (a stale socket from an earlier process is replaced). */
  public static BulkLink open(Path dir) {
    return open(dir, TOKEN_WAIT);
  }

  /** As {@link #open(Path)}; a connection must send its token within {@code tokenWait}. */
  public static BulkLink open(Path dir, Duration tokenWait) {
    return open(dir, SOCKET, tokenWait);
  }

  /**
   * Listens on the socket {@code name} in {@code dir}: the backend's agent link ({@code
   * agent.sock}, taken once at start) lives beside the fork's {@value #SOCKET}.
   */
  public static BulkLink open(Path dir, String name, Duration tokenWait) {
    Path sock = dir.resolve(name);
    try {
      Files.deleteIfExists(sock);
      ServerSocketChannel s = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
      try {
        s.bind(UnixDomainSocketAddress.of(sock));
        // Connecting needs write permission. The sandbox's user is not the host's; it reaches the
        // socket through the group the backend gave the directory, and no other user may.
        Files.setAttribute(
            sock,
            "unix:gid",
            Files.getAttribute(dir, "unix:gid", LinkOption.NOFOLLOW_LINKS),
            LinkOption.NOFOLLOW_LINKS);
        Files.setPosixFilePermissions(sock, PosixFilePermissions.fromString("rw-rw----"));
        s.configureBlocking(false);
      } catch (IOException | RuntimeException e) {
        s.close();
        throw e;
      }
      return new BulkLink(s, sock, tokenWait);
    } catch (IOException | UnsupportedOperationException e) {
      throw new AgentNestException(
          "cannot listen on the bulk link "
              + sock
              + ": "
              + e.getMessage()
              + " (it needs a writable /run/agentnest on the engine's host)",
          e);
    }
  }

  private static String newToken() {
    byte[] b = new byte[16];
    RANDOM.nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  /** A token for one transfer on this link; {@link #accept} hands its connection to its caller. */
  public String expect() {
    String t = newToken();
    expected.add(t);
    return t;
  }

  /**
   * The connection that presents {@code token} (from {@link #expect}), in blocking mode; null when
   * {@code giveUp} turns true first (the agent answered without connecting). Several transfers may
   * wait at once: a connection for another expected token is kept for its own caller.
   */
  public @Nullable SocketChannel accept(String token, long deadlineNanos, BooleanSupplier giveUp) {
    try (Selector sel = Selector.open()) {
      synchronized (this) {
        server.register(sel, SelectionKey.OP_ACCEPT);
      }
      while (true) {
        // Read before the queue is drained: an agent connects before it answers, so with an
        // answer seen first, its connection is already queued or none is coming.
        boolean answered = giveUp.getAsBoolean();
        SocketChannel mine = drainFor(token, deadlineNanos);
        if (mine != null) {
          return mine;
        }
        if (answered) {
          expected.remove(token);
          return null;
        }
        long left = deadlineNanos - System.nanoTime();
        if (left <= 0) {
          expected.remove(token);
          throw new AgentNestException(
              "the sandbox did not connect to its link "
                  + socket.getFileName()
                  + " in time: its agent may be stuck; destroy the sandbox if this repeats");
        }
        sel.select(Math.max(1, Math.min(20, left / 1_000_000)));
        sel.selectedKeys().clear();
      }
    } catch (IOException e) {
      throw new AgentNestException(
          "the link " + socket.getFileName() + " failed: " + e.getMessage(), e);
    }
  }

  /** Accepts what is queued, sorting connections to their transfers; this one's, if it came. */
  private synchronized @Nullable SocketChannel drainFor(String token, long deadlineNanos)
      throws IOException {
    while (true) {
      SocketChannel parked = arrived.remove(token);
      if (parked != null) {
        expected.remove(token);
        return parked;
      }
      SocketChannel c = server.accept();
      if (c == null) {
        return null;
      }
      String t = readToken(c, Math.min(deadlineNanos, System.nanoTime() + tokenWaitNanos));
      if (expected.contains(t) && !arrived.containsKey(t)) {
        c.configureBlocking(true);
        arrived.put(t, c);
        continue;
      }
      c.close();
      if (++strangers > MAX_STRANGERS) {
        throw new AgentNestException(
            "more than "
                + MAX_STRANGERS
                + " connections without the transfer's token reached the link "
                + socket.getFileName()
                + ": something in the sandbox is probing it; the transfer was stopped");
      }
    }
  }

  /**
   * Reads up to a newline, one byte at a time so nothing after the token is consumed; its selector
   * is closed on return, so the channel may go back to blocking mode.
   */
  private static String readToken(SocketChannel c, long deadlineNanos) throws IOException {
    c.configureBlocking(false);
    StringBuilder sb = new StringBuilder();
    ByteBuffer one = ByteBuffer.allocate(1);
    try (Selector sel = Selector.open()) {
      c.register(sel, SelectionKey.OP_READ);
      while (sb.length() <= 64) {
        one.clear();
        int n = c.read(one);
        if (n < 0) {
          return "";
        }
        if (n == 0) {
          long left = deadlineNanos - System.nanoTime();
          if (left <= 0) {
            return "";
          }
          sel.select(Math.max(1, left / 1_000_000));
          sel.selectedKeys().clear();
          continue;
        }
        char ch = (char) (one.get(0) & 0xff);
        if (ch == '\n') {
          return sb.toString();
        }
        sb.append(ch);
      }
      return "";
    }
  }

  @Override
  public synchronized void close() {
    for (SocketChannel c : arrived.values()) {
      try {
        c.close();
      } catch (IOException e) {
        // a transfer that never came for it
      }
    }
    arrived.clear();
    try {
      server.close();
      Files.deleteIfExists(socket);
    } catch (IOException e) {
      // Nothing listens any more; a stale socket file is replaced by the next open().
    }
  }
}
