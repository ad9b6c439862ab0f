package io.agentnest.docker.internal;

import io.agentnest.AgentNestException;
import io.agentnest.spi.support.BulkLink;
import java.io.Closeable;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The agent link: where a sandbox has a bulk directory (runc on a local engine), the host listens
 * on {@value #SOCKET} in it, the agent's bootstrap connects with a one-time token it got in its
 * environment, and the channel runs over that socket (a {@code SocketConnection}: frames as they
 * are, no stream multiplexing to undo) instead of the engine's attach stream. The listener is
 * closed (and the socket file removed) once the agent is in, so nothing started later in the
 * sandbox finds anything to connect to. Another host (process) attaches over the engine's attach
 * stream as before: the agent reads it beside the link and answers its calls there.
 *
 * <p>Why: through attach, every frame crosses dockerd and the container's shim twice, and a pool
 * refilling beside a busy sandbox (creates and starts) keeps both busy. Measured with an echo agent
 * while containers were started beside it: attach p99 22 ms, this socket 5 ms.
 */
final class AgentLinks {
  static final String SOCKET = "agent.sock";

  /** The container variable the bootstrap reads (and removes): {@code socket:token}. */
  static final String ENV = "AGENTNEST_LINK";

  /** {@code attach} keeps every new sandbox's channel on the engine's attach stream. */
  static final String SWITCH = "AGENTNEST_DOCKER_CHANNEL";

  /** The same as a system property, which wins (tests and embedding applications). */
  static final String PROPERTY = "agentnest.docker.channel";

  private static final Duration CONNECT_WAIT = Duration.ofSeconds(60);
  private static final Duration TOKEN_WAIT = Duration.ofSeconds(5);
  private static final long STATE_EVERY_NANOS = Duration.ofMillis(250).toNanos();

  private AgentLinks() {}

  /**
   * Whether new sandboxes get a link, from {@value #PROPERTY} or else {@value #SWITCH} (unset or
   * {@code link}: yes).
   */
  static boolean enabled() {
    String p = System.getProperty(PROPERTY);
    return enabled(p != null ? p : System.getenv(SWITCH));
  }

  static boolean enabled(@Nullable String value) {
    if (value == null || value.isBlank() || value.strip().equals("link")) {
      return true;
    }
    if (value.strip().equals("attach")) {
      return false;
    }
    throw new AgentNestException(
        SWITCH
            + "='"
            + value
            + "' is not a channel: use 'link' (the default, the agent's own socket) or 'attach'"
            + " (the engine's attach stream), or unset it");
  }

  /** A listener waiting for one agent, and the token that agent was given. */
  record Pending(BulkLink listener, String token) implements Closeable {
    /** The value of {@value #ENV} for the container. */
    String env() {
      return BulkDirs.MOUNT + "/" + SOCKET + ":" + token;
    }

    @Override
    public void close() {
      listener.close();
    }
  }

  static Pending listen(Path dir) {
    BulkLink l = BulkLink.open(dir, SOCKET, TOKEN_WAIT);
    return new Pending(l, l.expect());
  }

  /**
   * The agent's connection, in blocking mode. {@code ended} (whether the container stopped) is
   * asked at most every 250 ms; when it stopped first, the failure says what {@code state} knows.
   */
  static SocketChannel await(Pending p, BooleanSupplier ended, Supplier<String> state) {
    long[] next = {System.nanoTime() + STATE_EVERY_NANOS};
    BooleanSupplier throttled =
        () -> {
          long now = System.nanoTime();
          if (now - next[0] < 0) {
            return false;
          }
          next[0] = now + STATE_EVERY_NANOS;
          return ended.getAsBoolean();
        };
    SocketChannel ch =
        p.listener().accept(p.token(), System.nanoTime() + CONNECT_WAIT.toNanos(), throttled);
    if (ch == null) {
      throw new AgentNestException(
          "the sandbox's agent ended before it connected to the host: "
              + state.get()
              + ". If this repeats, set "
              + SWITCH
              + "=attach to use the engine's attach stream and see the agent's error");
    }
    return ch;
  }

  /** What an exit status of the bootstrap means, for the messages above. */
  static String exitReason(long status, boolean oomKilled) {
    if (oomKilled) {
      return "its container was killed for memory (exit status " + status + ")";
    }
    if (status == 96) {
      return "its agent could not reach "
          + BulkDirs.MOUNT
          + "/"
          + SOCKET
          + " (exit status 96: a runtime or security profile that refuses Unix sockets?)";
    }
    return "its container exited with status " + status;
  }
}
