package io.agentnest.internal.channel;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.spi.BackendSandbox;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

/**
 * A sandbox whose "agent" is the test: what a compromised sandbox could send (any frame the real
 * agent could), over a real loopback socket. A daemon thread drains and counts what the host sends,
 * so the host never blocks on a full pipe; a test may also read what the host sent ({@link
 * #nextRequest}) and answer it from that thread ({@link #answerWith}), as an agent would.
 */
public final class ForgedAgent implements BackendSandbox, AutoCloseable {
  private final Socket host;
  private final Socket agent;
  private final OutputStream agentOut;
  private final Map<String, AtomicLong> sent = new ConcurrentHashMap<>();
  private final Thread drain;
  // Bounded: a flood test sends thousands of frames it never reads back.
  private final BlockingQueue<Frame> requests = new ArrayBlockingQueue<>(10_000);
  private volatile Function<Frame, List<Frame>> responder = f -> List.of();

  public ForgedAgent() throws IOException {
    InetAddress lo = InetAddress.getByAddress(new byte[] {127, 0, 0, 1});
    try (ServerSocket server = new ServerSocket(0, 1, lo)) {
      host = new Socket();
      host.connect(new InetSocketAddress(lo, server.getLocalPort()), 5_000);
      agent = server.accept();
    }
    agentOut = new BufferedOutputStream(agent.getOutputStream(), 1 << 16);
    drain =
        new Thread(
            () -> {
              try {
                InputStream in = agent.getInputStream();
                Frame f;
                while ((f = FrameCodec.read(in)) != null) {
                  String op = f.header().path(Ops.OP).asText();
                  sent.computeIfAbsent(op, k -> new AtomicLong()).incrementAndGet();
                  requests.offer(f);
                  List<Frame> answer = responder.apply(f);
                  for (Frame a : answer) {
                    send(a.header(), a.payload());
                  }
                  if (!answer.isEmpty()) {
                    flush();
                  }
                }
              } catch (IOException | RuntimeException e) {
                // the channel closed
              }
            },
            "forged-agent-drain");
    drain.setDaemon(true);
    drain.start();
  }

  /** Sends a frame as the agent would. */
  public synchronized void send(ObjectNode header, byte[] payload) throws IOException {
    agentOut.write(FrameCodec.encode(header, payload));
  }

  public synchronized void flush() throws IOException {
    agentOut.flush();
  }

  /** Answers each frame the host sends with the frames {@code responder} returns (none: silent). */
  public void answerWith(Function<Frame, List<Frame>> responder) {
    this.responder = responder;
  }

  /** The next frame the host sent, waiting at most 10 seconds for it. */
  public Frame nextRequest() throws InterruptedException {
    Frame f = requests.poll(10, TimeUnit.SECONDS);
    if (f == null) {
      throw new AssertionError("the host sent no frame within 10 seconds");
    }
    return f;
  }

  /** The frames the host sent that no {@link #nextRequest} took yet. */
  public List<Frame> requestsSoFar() {
    return List.copyOf(requests);
  }

  /** How many frames of {@code op} the host sent so far. */
  public long sent(String op) {
    AtomicLong n = sent.get(op);
    return n == null ? 0 : n.get();
  }

  @Override
  public String id() {
    return "forged0123456789abcdef";
  }

  @Override
  public InputStream fromAgent() {
    try {
      return host.getInputStream();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public OutputStream toAgent() {
    try {
      return host.getOutputStream();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public String diagnostics() {
    return "";
  }

  @Override
  public void close() {
    try {
      host.close();
      agent.close();
    } catch (IOException e) {
      // closing anyway
    }
  }
}
