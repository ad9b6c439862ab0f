package io.agentnest.internal.browser;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.AgentNestException;
import io.agentnest.internal.support.Json;
import java.io.IOException;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

/**
 * Issue 42 (4): whatever answers on the DevTools link may be sandbox code, not the browser. Its
 * messages were parsed whole into trees (48 MiB of text became ~1.2 GB) and 16 were kept. These
 * tests speak as that impostor: deep nesting, floods of values and oversize messages are refused by
 * a streaming scan before any tree is built, and only answers and wanted events become trees.
 */
class CdpTest {
  /** A WebSocket that records what the host sent and whether it gave up on the peer. */
  static final class FakeSocket implements WebSocket {
    final List<String> sent = new CopyOnWriteArrayList<>();
    final AtomicBoolean aborted = new AtomicBoolean();

    @Override
    public CompletableFuture<WebSocket> sendText(CharSequence data, boolean last) {
      sent.add(data.toString());
      return CompletableFuture.completedFuture(this);
    }

    @Override
    public CompletableFuture<WebSocket> sendBinary(ByteBuffer data, boolean last) {
      return CompletableFuture.completedFuture(this);
    }

    @Override
    public CompletableFuture<WebSocket> sendPing(ByteBuffer message) {
      return CompletableFuture.completedFuture(this);
    }

    @Override
    public CompletableFuture<WebSocket> sendPong(ByteBuffer message) {
      return CompletableFuture.completedFuture(this);
    }

    @Override
    public CompletableFuture<WebSocket> sendClose(int statusCode, String reason) {
      return CompletableFuture.completedFuture(this);
    }

    @Override
    public void request(long n) {}

    @Override
    public String getSubprotocol() {
      return "";
    }

    @Override
    public boolean isOutputClosed() {
      return aborted.get();
    }

    @Override
    public boolean isInputClosed() {
      return aborted.get();
    }

    @Override
    public void abort() {
      aborted.set(true);
    }
  }

  private final FakeSocket socket = new FakeSocket();
  private final Cdp cdp = new Cdp(socket);
  private final Cdp.Listener listener = new Cdp.Listener();

  {
    listener.cdp = cdp;
  }

  private void receive(String text) {
    CompletionStage<?> ignored = listener.onText(socket, text, true);
  }

  @Test
  void aDeeplyNestedMessageIsRefusedUnparsedAndEndsTheSession() {
    int depth = 200_000; // a recursive tree builder would overflow its stack on this
    String nested = "{\"id\":1,\"result\":" + "[".repeat(depth) + "]".repeat(depth) + "}";
    receive(nested);
    assertThat(socket.aborted).isTrue();
    assertThatThrownBy(() -> cdp.call("Page.enable", Json.object(), Duration.ofSeconds(1)))
        .isInstanceOf(AgentNestException.class)
        .hasMessageContaining("refused unparsed")
        .hasMessageContaining("depth " + Cdp.MAX_DEPTH);
  }

  @Test
  void aFloodOfValuesIsRefusedBeforeATreeIsBuilt() {
    // 6 MiB of text under the size cap, ~3 million values: the old parser built them all.
    StringBuilder b = new StringBuilder("{\"method\":\"Network.responseReceived\",\"params\":[");
    for (int i = 0; i < 3_000_000; i++) {
      b.append("0,");
    }
    b.append("0]}");
    assertThat(b.length()).isLessThan(Cdp.MAX_MESSAGE);
    List<JsonNode> events = new CopyOnWriteArrayList<>();
    cdp.onEvent(Set.of("Network.responseReceived"), events::add);
    receive(b.toString());
    assertThat(events).isEmpty();
    assertThat(socket.aborted).isTrue();
    assertThatThrownBy(() -> cdp.call("Page.enable", Json.object(), Duration.ofSeconds(1)))
        .hasMessageContaining("refused unparsed")
        .hasMessageContaining(Cdp.MAX_TOKENS + " values");
  }

  @Test
  void aMessageOverTheCapEndsTheSessionNamingTheCap() {
    String chunk = "x".repeat(1 << 20);
    for (int i = 0; i <= Cdp.MAX_MESSAGE >> 20; i++) {
      listener.onText(socket, chunk, false);
    }
    assertThat(socket.aborted).isTrue();
    assertThatThrownBy(() -> cdp.call("Page.enable", Json.object(), Duration.ofSeconds(1)))
        .hasMessageContaining("over " + (Cdp.MAX_MESSAGE >> 20) + " MiB was refused");
  }

  @Test
  void unwantedEventsAndUnaskedAnswersAreDroppedWithoutATree() throws Exception {
    List<JsonNode> events = new CopyOnWriteArrayList<>();
    cdp.onEvent(Set.of("Page.loadEventFired"), events::add);
    receive("{\"method\":\"Network.dataReceived\",\"params\":{\"x\":[1,2,3]}}");
    receive("{\"id\":999,\"result\":{\"x\":1}}");
    receive("{\"method\":\"Page.loadEventFired\",\"params\":{}}");
    assertThat(events).hasSize(1);
    assertThat(events.get(0).path("method").asText()).isEqualTo("Page.loadEventFired");
    assertThat(socket.aborted).isFalse();

    // A well-formed answer to a pending call still arrives.
    CompletableFuture<JsonNode> answer =
        CompletableFuture.supplyAsync(
            () -> cdp.call("Runtime.evaluate", Json.object(), Duration.ofSeconds(5)));
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
    while (socket.sent.isEmpty() && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    receive("{\"result\":{\"result\":{\"value\":\"hi\"}},\"id\":1}");
    assertThat(answer.get(5, TimeUnit.SECONDS).path("result").path("value").asText())
        .isEqualTo("hi");
  }

  @Test
  void theScanReadsIdAndMethodAndRefusesWhatIsNotOneObject() throws IOException {
    assertThat(Cdp.scan("{\"params\":{\"id\":5},\"id\":7}").id()).isEqualTo(7);
    assertThat(Cdp.scan("{\"method\":\"A.b\",\"params\":{\"method\":\"X\"}}").method())
        .isEqualTo("A.b");
    for (String bad : List.of("[]", "{\"id\":1", "{}{}", "1", "{\"a\":\"" + "b")) {
      assertThatThrownBy(() -> Cdp.scan(bad), bad).isInstanceOf(IOException.class);
    }
  }
}
