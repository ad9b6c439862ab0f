package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import io.agentnest.AgentNestException;
import io.agentnest.Browser;
import io.agentnest.NetworkEvent;
import io.agentnest.NetworkPolicy;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.UnsupportedControlException;
import io.agentnest.internal.egress.EgressResolvers;
import io.agentnest.internal.egress.StaticResolver;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Chromium in a browser-preset sandbox renders a page that a test server on the host's loopback
 * serves through the egress proxy (the test-only loopback allowance: a static resolver and
 * allowAddress 127.0.0.1, as in EgressIT); a page off the allowlist is refused and recorded.
 */
@ExtendWith(DockerEngineRequired.class)
class BrowserIT {
  static final String PAGE =
      "<!doctype html><html><head><title>t</title><style>body{margin:0;background:#fff}"
          + "#box{position:absolute;left:0;top:0;width:300px;height:200px;background:#ff0000}"
          + "</style></head><body><div id=box></div>"
          + "<p style='margin-top:220px'>Hello from the host page</p>"
          + "<script>document.title='rendered'</script></body></html>";

  static HttpServer server;
  static int port;
  static final List<NetworkEvent> events = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void serve() throws Exception {
    PresetImages.ensure("browser");
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext(
        "/",
        ex -> {
          byte[] body = PAGE.getBytes(StandardCharsets.UTF_8);
          ex.getResponseHeaders().add("Content-Type", "text/html; charset=utf-8");
          ex.sendResponseHeaders(200, body.length);
          try (OutputStream o = ex.getResponseBody()) {
            o.write(body);
          }
        });
    server.start();
    port = server.getAddress().getPort();
    EgressResolvers.replaceForTests(
        StaticResolver.of("page.test", "127.0.0.1").with("denied.test", "127.0.0.1"));
  }

  @AfterAll
  static void stop() {
    EgressResolvers.replaceForTests(null);
    if (server != null) {
      server.stop(0);
    }
  }

  static Sandbox browserSandbox() {
    return Sandbox.create(
        SandboxConfig.preset("browser")
            .network(
                NetworkPolicy.builder()
                    .allow("page.test:" + port)
                    .allowAddress("127.0.0.1")
                    .build())
            .onNetworkEvent(events::add)
            .build());
  }

  @Test
  void aPageThroughTheProxyIsRenderedAndReadBack() throws Exception {
    try (Sandbox sb = browserSandbox();
        Browser b = sb.browser()) {
      b.open("http://page.test:" + port + "/");
      BufferedImage png = ImageIO.read(new ByteArrayInputStream(b.screenshot()));
      assertThat(png.getWidth()).isEqualTo(1280);
      assertThat(png.getHeight()).isEqualTo(800);
      int inBox = png.getRGB(150, 100) & 0xffffff;
      int outside = png.getRGB(600, 100) & 0xffffff;
      assertThat(inBox).as("the red box").isEqualTo(0xff0000);
      assertThat(outside).as("the white page").isEqualTo(0xffffff);
      assertThat(b.html()).contains("<div id=\"box\"></div>").contains("<title>rendered</title>");
      assertThat(b.text()).contains("Hello from the host page");
      assertThat(events)
          .anySatisfy(
              e -> {
                assertThat(e.host()).isEqualTo("page.test");
                assertThat(e.decision()).isEqualTo(NetworkEvent.Decision.ALLOWED);
              });
      // The DevTools endpoint on the host's loopback, for Playwright's connectOverCDP.
      URI cdp = b.devToolsUri();
      HttpResponse<String> version =
          HttpClient.newHttpClient()
              .send(
                  HttpRequest.newBuilder(cdp.resolve("/json/version")).build(),
                  HttpResponse.BodyHandlers.ofString());
      assertThat(version.body()).contains("Chrome/");
    }
  }

  @Test
  void aPageOffTheAllowlistIsRefusedAndRecorded() {
    try (Sandbox sb = browserSandbox();
        Browser b = sb.browser()) {
      assertThatThrownBy(() -> b.open("http://denied.test:" + port + "/"))
          .isInstanceOf(AgentNestException.class)
          .hasMessageContaining("denied.test")
          .hasMessageContaining("network policy refused it");
      assertThat(b.text()).doesNotContain("Hello from the host page");
      assertThat(events)
          .anySatisfy(
              e -> {
                assertThat(e.host()).isEqualTo("denied.test");
                assertThat(e.decision()).isEqualTo(NetworkEvent.Decision.DENIED);
              });
    }
  }

  @Test
  void anImageWithoutChromiumIsRefusedClearly() {
    try (Sandbox sb = Sandbox.create()) {
      assertThatThrownBy(sb::browser)
          .isInstanceOf(UnsupportedControlException.class)
          .hasMessageContaining("has no Chromium")
          .hasMessageContaining("preset");
    }
  }
}
