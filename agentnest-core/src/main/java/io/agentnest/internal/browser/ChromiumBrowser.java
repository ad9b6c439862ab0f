package io.agentnest.internal.browser;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.AgentNestException;
import io.agentnest.Browser;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.Exposed;
import io.agentnest.Sandbox;
import io.agentnest.UnsupportedControlException;
import io.agentnest.internal.support.Bounded;
import io.agentnest.internal.support.Json;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;

/**
 * Chromium, headless, inside the sandbox: as the sandbox's user, with the sandbox's seccomp
 * profile, read-only root and no capabilities (so Chromium's own sandbox is off: the container is
 * the sandbox), its proxy set to the sandbox's egress endpoint so every page load passes the
 * allowlist and the audit. Its DevTools port is {@linkplain Sandbox#expose exposed} to the host.
 */
public final class ChromiumBrowser implements Browser {
  static final int WIDTH = 1280;
  static final int HEIGHT = 800;
  private static final Duration CALL = Duration.ofSeconds(30);
  private static final int MAX_LIST = 1 << 20;
  private static final String RESPONSE_RECEIVED = "Network.responseReceived";
  private static final String LOAD_EVENT_FIRED = "Page.loadEventFired";

  private final Execution process;
  private final Exposed devtools;
  private final Cdp cdp;
  private final AtomicReference<CompletableFuture<Void>> loaded = new AtomicReference<>();
  // Document responses by loader id: the navigation's may arrive before Page.navigate answers
  // with its loader id. Only what is read later is kept (the proxy's refusal, or "" for none),
  // never the response's tree, and only the last few.
  private final Map<String, String> documents =
      Collections.synchronizedMap(
          new LinkedHashMap<>() {
            private static final long serialVersionUID = 1L;

            @Override
            protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
              return size() > 16;
            }
          });

  private ChromiumBrowser(Execution process, Exposed devtools, Cdp cdp) {
    this.process = process;
    this.devtools = devtools;
    this.cdp = cdp;
    cdp.onEvent(Set.of(RESPONSE_RECEIVED, LOAD_EVENT_FIRED), this::event);
  }

  /**
   * Starts Chromium in {@code sb} and connects to it.
   *
   * @param proxyPort the sandbox's egress endpoint (127.0.0.1 inside it)
   */
  public static ChromiumBrowser start(Sandbox sb, int proxyPort, Duration timeout) {
    ExecResult which = sb.exec("command -v chromium");
    if (which.exitCode() != 0) {
      throw new UnsupportedControlException(
          "the sandbox's image ("
              + sb.config().image()
              + ") has no Chromium: use the browser preset (SandboxConfig.preset(\"browser\"),"
              + " after 'agentnest image build --preset browser')");
    }
    // Port and profile are random: code that ran in the sandbox before cannot listen there first
    // (issue 42), and what listens is checked to be this browser before the host connects.
    int port = DevToolsPort.randomPort();
    String profile = DevToolsPort.randomProfile();
    List<String> argv =
        List.of(
            "chromium",
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--no-default-browser-check",
            "--mute-audio",
            "--hide-scrollbars",
            "--window-size=1280,800",
            "--user-data-dir=" + profile,
            "--proxy-server=http://127.0.0.1:" + proxyPort,
            // Loopback too goes through the proxy: a page may not reach the sandbox's own ports.
            "--proxy-bypass-list=<-loopback>",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=" + port,
            "about:blank");
    // The shell announces its pid, which exec hands on to Chromium; Chromium's logging then goes
    // nowhere but its log file: only the DevTools channel is read.
    CompletableFuture<Integer> pid = new CompletableFuture<>();
    StringBuilder first = new StringBuilder();
    Execution p =
        sb.start(
            concat(
                List.of(
                    "sh",
                    "-c",
                    "echo \"agentnest-pid $$\"; exec \"$@\" >" + profile + ".log 2>&1",
                    "sh"),
                argv),
            ExecOptions.builder()
                .timeout(sb.config().ttl())
                .onOutput(
                    c -> {
                      if (!pid.isDone() && first.length() < 200) {
                        first.append(c.text());
                        int announced = DevToolsPort.pid(first.toString());
                        if (announced > 0) {
                          pid.complete(announced);
                        }
                      }
                    })
                .build());
    Exposed ex = null;
    try {
      int browserPid = awaitPid(pid, p);
      DevToolsPort.awaitBrowser(sb, browserPid, port, profile, timeout);
      ex = sb.expose(port);
      HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
      URI base = URI.create("http://127.0.0.1:" + ex.port());
      URI ws = pageSocket(http, base, ex.port(), timeout);
      Cdp cdp = Cdp.connect(http, ws, Duration.ofSeconds(10));
      ChromiumBrowser b = new ChromiumBrowser(p, ex, cdp);
      cdp.call("Page.enable", Json.object(), CALL);
      cdp.call("Network.enable", Json.object(), CALL);
      // The viewport itself is 1280x800 (the window's size counts the browser's frame).
      cdp.call(
          "Emulation.setDeviceMetricsOverride",
          Json.object()
              .put("width", WIDTH)
              .put("height", HEIGHT)
              .put("deviceScaleFactor", 1)
              .put("mobile", false),
          CALL);
      return b;
    } catch (RuntimeException e) {
      if (ex != null) {
        ex.close();
      }
      p.cancel();
      throw new AgentNestException(
          e.getMessage() + "; Chromium's log ends: " + logTail(sb, profile), e);
    }
  }

  private static int awaitPid(CompletableFuture<Integer> pid, Execution p) {
    try {
      return pid.get(10, TimeUnit.SECONDS);
    } catch (TimeoutException | ExecutionException e) {
      throw new AgentNestException(
          "the browser's start did not announce its process within 10 s"
              + (p.result().isDone() ? " (it ended)" : ""));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AgentNestException("interrupted while Chromium started", e);
    }
  }

  /** The end of Chromium's log in the sandbox (its text is the sandbox's: bounded). */
  private static String logTail(Sandbox sb, String profile) {
    try {
      return Bounded.text(sb.exec("tail -c 1500 " + profile + ".log").stdout().strip(), 1500);
    } catch (RuntimeException e) {
      return "(unreadable: " + e.getMessage() + ")";
    }
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> out = new ArrayList<>(a);
    out.addAll(b);
    return out;
  }

  /** The page target's WebSocket, once Chromium's DevTools answer (polled up to the deadline). */
  private static URI pageSocket(HttpClient http, URI base, int hostPort, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    String last = "no answer";
    while (System.nanoTime() < deadline) {
      try {
        HttpResponse<InputStream> r =
            http.send(
                HttpRequest.newBuilder(base.resolve("/json/list"))
                    .timeout(Duration.ofSeconds(5))
                    .build(),
                HttpResponse.BodyHandlers.ofInputStream());
        byte[] body;
        try (InputStream in = r.body()) {
          // Read no more than the bound: the answer is the sandbox's, whatever its length says.
          body = in.readNBytes(MAX_LIST + 1);
        }
        if (r.statusCode() == 200 && body.length <= MAX_LIST) {
          for (JsonNode t : Cdp.BOUNDED.readTree(body)) {
            if (t.path("type").asText().equals("page")) {
              URI inSandbox = URI.create(t.path("webSocketDebuggerUrl").asText());
              // The sandbox names its own port; the host reaches it on the exposed one.
              return URI.create("ws://127.0.0.1:" + hostPort + inSandbox.getRawPath());
            }
          }
          last = "no page target yet";
        } else {
          last = "HTTP " + r.statusCode();
        }
      } catch (IOException e) {
        last = e.toString();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AgentNestException("interrupted while Chromium started", e);
      }
      try {
        Thread.sleep(25);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AgentNestException("interrupted while Chromium started", e);
      }
    }
    throw new AgentNestException(
        "Chromium's DevTools did not answer within "
            + timeout.toSeconds()
            + " s ("
            + last
            + "): the sandbox may lack memory or pids for it (the browser preset sets both)");
  }

  private void event(JsonNode e) {
    String method = e.path("method").asText();
    if (method.equals(RESPONSE_RECEIVED)) {
      JsonNode p = e.path("params");
      if (p.path("type").asText().equals("Document")) {
        String denied = deniedBy(p.path("response"));
        documents.put(
            Bounded.text(p.path("loaderId").asText(""), 200),
            denied == null ? "" : Bounded.text(denied, 300));
      }
      return;
    }
    if (method.equals(LOAD_EVENT_FIRED)) {
      CompletableFuture<Void> f = loaded.get();
      if (f != null) {
        f.complete(null);
      }
    }
  }

  @Override
  public synchronized void open(String url, Duration timeout) {
    CompletableFuture<Void> f = new CompletableFuture<>();
    loaded.set(f);
    documents.clear();
    JsonNode r = cdp.call("Page.navigate", Json.object().put("url", url), timeout);
    String loaderId = r.path("loaderId").asText("");
    String error = r.path("errorText").asText("");
    if (!error.isEmpty()) {
      throw new AgentNestException(
          "the browser could not load "
              + url
              + ": "
              + error
              + (error.contains("TUNNEL") || error.contains("PROXY")
                  ? " (the sandbox's network policy refused it, or the host is unreachable; see the"
                      + " audit's network.attempt records)"
                  : ""));
    }
    try {
      f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new AgentNestException(
          "the page " + url + " did not finish loading within " + timeout.toMillis() + " ms");
    } catch (ExecutionException e) {
      throw new AgentNestException("loading " + url + " failed: " + e.getCause(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AgentNestException("interrupted while loading " + url, e);
    }
    String denied = documents.get(loaderId);
    if (denied != null && !denied.isEmpty()) {
      throw new AgentNestException(
          "the browser could not load "
              + url
              + ": the sandbox's network policy refused it ("
              + Bounded.text(denied, 300)
              + "); allow the host in the sandbox's network policy if it should be reached");
    }
  }

  /** The egress proxy's refusal, if that is what the page is (its X-AgentNest-Denied header). */
  private static @Nullable String deniedBy(JsonNode response) {
    var fields = response.path("headers").fields();
    while (fields.hasNext()) {
      var h = fields.next();
      if (h.getKey().equalsIgnoreCase("X-AgentNest-Denied")) {
        return h.getValue().asText();
      }
    }
    return null;
  }

  @Override
  public synchronized byte[] screenshot() {
    JsonNode r = cdp.call("Page.captureScreenshot", Json.object().put("format", "png"), CALL);
    return Base64.getDecoder().decode(r.path("data").asText());
  }

  @Override
  public synchronized String html() {
    return evaluate("document.documentElement.outerHTML");
  }

  @Override
  public synchronized String text() {
    return evaluate("document.body ? document.body.innerText : ''");
  }

  private String evaluate(String expression) {
    JsonNode r =
        cdp.call(
            "Runtime.evaluate",
            Json.object().put("expression", expression).put("returnByValue", true),
            CALL);
    return r.path("result").path("value").asText("");
  }

  @Override
  public URI devToolsUri() {
    return URI.create("http://127.0.0.1:" + devtools.port());
  }

  @Override
  public void close() {
    cdp.close();
    devtools.close();
    process.cancel();
  }
}
