package io.agentnest.internal.channel;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.internal.audit.Budget;
import io.agentnest.internal.egress.EgressProxy;
import io.agentnest.internal.support.Json;
import io.agentnest.spi.support.DaemonThreads;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The host end of the sandbox's egress tunnels: each TCP connection that code in the sandbox opens
 * to its local proxy port arrives here over the agent channel and is served by the {@link
 * EgressProxy}. Credit-based flow control (a window per direction) bounds every buffer; a sandbox
 * that sends beyond its credit or opens too many tunnels loses the tunnel, never host memory.
 */
public final class EgressTunnels implements Consumer<Frame> {
  private static final Logger LOG = LoggerFactory.getLogger(EgressTunnels.class);
  static final int WINDOW = 1 << 20;
  static final int MAX_TUNNELS = 256;
  private static final ExecutorService POOL = DaemonThreads.pool("agentnest-egress");

  private final AgentChannel channel;
  private final EgressProxy proxy;
  private final Budget budget;
  private final Runnable overBudget;
  private final Map<Long, ChannelTunnel> tunnels = new ConcurrentHashMap<>();
  private volatile boolean closed;

  /**
   * @param budget how many tunnels the sandbox may open; past it an open is closed at once, with no
   *     proxy attempt and so no record of its own
   * @param overBudget called once when the sandbox keeps opening past its budget (destroy it)
   */
  public EgressTunnels(
      AgentChannel channel, EgressProxy proxy, Budget budget, Runnable overBudget) {
    this.channel = channel;
    this.proxy = proxy;
    this.budget = budget;
    this.overBudget = overBudget;
  }

  @Override
  public void accept(Frame f) {
    long tid = f.header().path("tid").asLong(-1);
    if (tid <= 0) {
      return;
    }
    if (f.ev().equals(Ops.EV_TCP_OPEN)) {
      open(tid);
      return;
    }
    ChannelTunnel t = tunnels.get(tid);
    if (t != null) {
      t.accept(f);
    }
  }

  private void open(long tid) {
    if (closed || tunnels.size() >= MAX_TUNNELS || tunnels.containsKey(tid)) {
      send(Json.object().put(Ops.OP, Ops.OP_TCP_CLOSE).put("tid", tid), new byte[0]);
      return;
    }
    Budget.Decision d = budget.take();
    if (d != Budget.Decision.ADMIT) {
      send(Json.object().put(Ops.OP, Ops.OP_TCP_CLOSE).put("tid", tid), new byte[0]);
      if (d == Budget.Decision.DESTROY) {
        overBudget.run();
      }
      return;
    }
    ChannelTunnel t = new ChannelTunnel(channel, tid, WINDOW);
    tunnels.put(tid, t);
    POOL.execute(
        () -> {
          try {
            proxy.handle(t.in, t.out);
          } finally {
            tunnels.remove(tid);
            t.sendClose();
          }
        });
  }

  private void send(ObjectNode h, byte[] payload) {
    try {
      channel.send(h, payload);
    } catch (RuntimeException e) {
      LOG.debug("egress tunnel frame not sent: {}", e.toString());
    }
  }

  /** Everything open is aborted when the sandbox goes away; later opens are closed at once. */
  public void closeAll() {
    closed = true;
    tunnels.values().forEach(ChannelTunnel::abort);
    tunnels.clear();
  }
}
