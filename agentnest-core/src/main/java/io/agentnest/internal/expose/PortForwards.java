package io.agentnest.internal.expose;

import io.agentnest.ExposeException;
import io.agentnest.Exposed;
import io.agentnest.SandboxClosedException;
import io.agentnest.audit.AuditEvent;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.ChannelTunnel;
import io.agentnest.internal.channel.Frame;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import java.util.function.IntPredicate;
import org.jspecify.annotations.Nullable;

/**
 * The exposed ports of one sandbox and the connections they carry. Bounds: at most {@link
 * #MAX_PORTS} ports and {@link #MAX_CONNECTIONS} connections at once per sandbox (a connection past
 * it is closed on accept and counted), and each connection buffers at most {@link #WINDOW} bytes
 * from the sandbox, so a sandbox that floods its side costs the host at most {@code MAX_CONNECTIONS
 * * WINDOW} bytes.
 */
public final class PortForwards {
  public static final int MAX_PORTS = 16;
  public static final int MAX_CONNECTIONS = 64;
  static final int WINDOW = 256 * 1024;

  private final AgentChannel channel;
  private final BiConsumer<String, Map<String, ?>> audit;
  private final IntPredicate reserved;
  private final Map<Long, ChannelTunnel> tunnels = new ConcurrentHashMap<>();
  private final List<ExposedPort> ports = new CopyOnWriteArrayList<>();
  // The agent numbers its egress tunnels from 1 up; the host numbers these from -1 down.
  private final AtomicLong nextTid = new AtomicLong();
  private final AtomicInteger connections = new AtomicInteger();
  private volatile boolean closed;

  /**
   * @param reserved sandbox ports that may not be exposed (the agent's egress proxy endpoint)
   */
  public PortForwards(
      AgentChannel channel, BiConsumer<String, Map<String, ?>> audit, IntPredicate reserved) {
    this.channel = channel;
    this.audit = audit;
    this.reserved = reserved;
    channel.onForwardFrames(this::accept);
    // An agent that died takes every carried connection with it: end them and the listeners.
    channel.onDeath(this::closeAll);
  }

  /** Opens a host listener for {@code sandboxPort} (see {@link io.agentnest.Sandbox#expose}). */
  public synchronized Exposed expose(int sandboxPort, int hostPort) {
    if (sandboxPort < 1 || sandboxPort > 65535) {
      throw new ExposeException(
          ExposeException.Reason.BAD_PORT,
          "cannot expose port " + sandboxPort + ": a TCP port is 1 to 65535");
    }
    if (reserved.test(sandboxPort)) {
      throw new ExposeException(
          ExposeException.Reason.BAD_PORT,
          "cannot expose port "
              + sandboxPort
              + ": the sandbox's egress proxy endpoint listens there; expose the port of your own"
              + " server");
    }
    if (hostPort < 0 || hostPort > 65535) {
      throw new ExposeException(
          ExposeException.Reason.BAD_PORT,
          "host port "
              + hostPort
              + " is not a TCP port: give 1 to 65535, or 0 for an ephemeral one");
    }
    if (closed || !channel.isAlive()) {
      throw new SandboxClosedException("cannot expose a port of a sandbox that is gone");
    }
    ports.removeIf(p -> !p.isOpen());
    if (ports.size() >= MAX_PORTS) {
      throw new ExposeException(
          ExposeException.Reason.TOO_MANY_PORTS,
          "the sandbox already exposes "
              + MAX_PORTS
              + " ports: close one (Exposed.close()) before exposing another");
    }
    ExposedPort p = ExposedPort.open(this, sandboxPort, hostPort);
    ports.add(p);
    audit(AuditEvent.PORT_EXPOSED, Map.of("port", sandboxPort, "host_port", p.port()));
    p.startAccepting();
    return p;
  }

  /** Ends every port and connection: the sandbox is going away. */
  public void closeAll() {
    closed = true;
    ports.forEach(ExposedPort::close);
    ports.clear();
    tunnels.values().forEach(ChannelTunnel::abort);
    tunnels.clear();
  }

  /** Connections carried right now, over all ports. */
  public int connections() {
    return connections.get();
  }

  private void accept(Frame f) {
    ChannelTunnel t = tunnels.get(f.header().path("tid").asLong(0));
    if (t != null) {
      t.accept(f);
    }
  }

  /** A slot for one more connection, or null at the bound. */
  @Nullable ChannelTunnel admit() {
    if (closed) {
      return null;
    }
    if (connections.incrementAndGet() > MAX_CONNECTIONS) {
      connections.decrementAndGet();
      return null;
    }
    ChannelTunnel t = new ChannelTunnel(channel, nextTid.decrementAndGet(), WINDOW);
    tunnels.put(t.tid(), t);
    return t;
  }

  void release(ChannelTunnel t) {
    if (tunnels.remove(t.tid()) != null) {
      connections.decrementAndGet();
    }
  }

  AgentChannel channel() {
    return channel;
  }

  void audit(String type, Map<String, ?> data) {
    audit.accept(type, data);
  }
}
