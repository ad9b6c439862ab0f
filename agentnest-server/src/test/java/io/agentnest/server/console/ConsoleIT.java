package io.agentnest.server.console;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.sun.net.httpserver.HttpServer;
import io.agentnest.audit.AuditLog;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.internal.egress.EgressResolvers;
import io.agentnest.internal.egress.StaticResolver;
import io.agentnest.server.Http;
import io.agentnest.server.TestServer;
import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.http.Wire;
import io.agentnest.server.tenancy.KeyRole;
import io.agentnest.server.tenancy.Tenant;
import io.agentnest.tck.Prerequisites;
import java.io.File;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.JavascriptExecutor;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The web console in a real headless Chromium (Debian's chromium and chromium-driver, driven by
 * Selenium) against a real server and engine: sign in, a sandbox appears, its files (one named like
 * an XSS payload) show as text, an approval question appears without a reload and is approved and
 * another denied from the page (the sandbox's command then proceeds or is refused), the audit is
 * filtered and a tampered record is flagged. HTTP-level attack tests check the cookie's flags, CSRF
 * on every change, sign-out and another tenant's sandbox.
 */
@ExtendWith(DockerEngineRequired.class)
class ConsoleIT {
  /**
   * Where the tests keep screenshots of the main pages: target/console-screenshots, so that a test
   * run leaves the checkout as it found it; docs/console/ of the repository (the pictures
   * docs/console.md shows) when the run is asked to refresh them with
   * -Dagentnest.docs.screenshots=true.
   */
  static final Path SHOTS =
      Boolean.getBoolean("agentnest.docs.screenshots")
          ? Path.of("..", "docs", "console")
          : Path.of("target", "console-screenshots");

  static final String XSS_FILE = "<img src=x onerror=window.__xss=1>.txt";
  static final String XSS_TARGET = "<img src=x onerror=window.__xss=3>";

  /**
   * A shell word naming a file whose name holds the XSS payload, a right-to-left override (issue
   * 42: U+202E + "etats-lla" read "all-state") and terminal escapes.
   */
  static final String HOSTILE_NAME =
      "\"$(printf '" + XSS_TARGET + "\u202eetats-lla\\033]0;pwned\\007\\033[31m')\"";

  /**
   * In the path of a network question's request (a host name cannot hold it: the proxy refuses).
   */
  static final String XSS_PATH = "/<img/src=x/onerror=window.__xss=4>";

  @TempDir static Path dir;
  static TestServer running;

  /** What the sandbox's approved requests reach: on loopback, through the host's egress proxy. */
  static HttpServer web;

  static Http http;
  static String keyA;
  static String keyB;
  static String sandboxA;
  static String sandboxB;
  static HttpClient client = HttpClient.newHttpClient();

  @BeforeAll
  static void start() throws Exception {
    web = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    web.createContext(
        "/",
        ex -> {
          byte[] body =
              ("hello from " + ex.getRequestURI().getRawPath()).getBytes(StandardCharsets.UTF_8);
          ex.sendResponseHeaders(200, body.length);
          try (OutputStream o = ex.getResponseBody()) {
            o.write(body);
          }
        });
    web.start();
    // Test names resolve to the test's own server; the server's policy allows that one address.
    EgressResolvers.replaceForTests(
        StaticResolver.of("ask.test", "127.0.0.1").with("deny.test", "127.0.0.1"));
    running =
        TestServer.start(
            dir,
            ServerConfig.parse(
                "listen: {host: 127.0.0.1, port: 0}\nmax_json: 64k\nmax_body: 1m\n"
                    + "policy: {ask_hosts: [\"*.test\"], allow_addresses: [127.0.0.1/32]}\n",
                "test"));
    keyA = running.key(new Tenant("alpha", 3, 2L << 30, 3, 1000, null, null));
    keyB = running.key(new Tenant("beta", 2, 2L << 30, 2, 1000, null, null));
    http = running.http();
    sandboxA =
        http.created(
            keyA,
            "{\"memoryBytes\": 268435456, \"approvals\": \"recommended\","
                + " \"askUnknownHosts\": true}");
    sandboxB = http.created(keyB, "{\"memoryBytes\": 268435456}");
  }

  @AfterAll
  static void stop() {
    try {
      if (running != null) {
        running.close();
      }
    } finally {
      EgressResolvers.replaceForTests(null);
      if (web != null) {
        web.stop(0);
      }
    }
  }

  static String base() {
    return "http://127.0.0.1:" + running.port();
  }

  static WebDriver chrome() {
    File browser = new File("/usr/bin/chromium");
    File driver = new File("/usr/bin/chromedriver");
    if (!browser.canExecute() || !driver.canExecute()) {
      Prerequisites.missing(
          "Chromium and chromedriver",
          "apt-get install chromium chromium-driver (scripts/setup-host.sh installs them)");
    }
    ChromeOptions o = new ChromeOptions();
    o.setBinary(browser);
    o.addArguments(
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,800");
    ChromeDriverService service =
        new ChromeDriverService.Builder().usingDriverExecutable(driver).usingAnyFreePort().build();
    return new ChromeDriver(service, o);
  }

  static void upload(String key, String sandbox, String path, String text) {
    Http.Reply r =
        http.send(
            "PUT",
            "/v1/sandboxes/" + sandbox + "/files/content?path=" + q(path),
            key,
            text.getBytes(StandardCharsets.UTF_8),
            "application/octet-stream");
    assertThat(r.status()).as(r.text()).isEqualTo(201);
  }

  static String q(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }

  static void shot(WebDriver d, String name) throws Exception {
    Files.createDirectories(SHOTS);
    Files.write(SHOTS.resolve(name), ((TakesScreenshot) d).getScreenshotAs(OutputType.BYTES));
  }

  /** A wait that also retries when the page re-rendered the element it was reading. */
  static WebDriverWait waiting(WebDriver d, int seconds) {
    WebDriverWait w = new WebDriverWait(d, Duration.ofSeconds(seconds));
    w.ignoring(StaleElementReferenceException.class);
    return w;
  }

  static WebElement waitFor(WebDriver d, By by) {
    return waiting(d, 15)
        .until(
            x ->
                x.findElements(by).stream()
                    .filter(WebElement::isDisplayed)
                    .findFirst()
                    .orElse(null));
  }

  static CompletableFuture<Http.Reply> execAsync(String command) {
    return CompletableFuture.supplyAsync(
        () ->
            http.json(
                "POST",
                "/v1/sandboxes/" + sandboxA + "/exec",
                keyA,
                "{\"command\": " + Wire.JSON.valueToTree(command) + ", \"timeoutSeconds\": 120}"));
  }

  static CompletableFuture<Http.Reply> codeAsync(String code) {
    return CompletableFuture.supplyAsync(
        () ->
            http.json(
                "POST",
                "/v1/sandboxes/" + sandboxA + "/code",
                keyA,
                "{\"code\": " + Wire.JSON.valueToTree(code) + ", \"timeoutSeconds\": 120}"));
  }

  /** Python in the sandbox: fetches {@code url} through the proxy; the body, or the HTTP error. */
  static String fetch(String url) {
    return "import urllib.request, urllib.error\n"
        + "try:\n"
        + "    r = urllib.request.urlopen('"
        + url
        + "', timeout=100).read().decode()\n"
        + "except urllib.error.HTTPError as e:\n"
        + "    r = 'refused %d' % e.code\n"
        + "r";
  }

  /**
   * Python in the sandbox: sends {@code GET target} (a Python bytes literal's text) to the egress
   * proxy as written, without a client library's checks; the proxy's status line.
   */
  static String rawRequest(String host, String target) {
    return "import os, socket, urllib.parse\n"
        + "p = urllib.parse.urlsplit(os.environ['HTTP_PROXY'])\n"
        + "s = socket.create_connection((p.hostname, p.port), timeout=100)\n"
        + "s.sendall(b'GET "
        + target
        + " HTTP/1.1\\r\\nHost: "
        + host
        + "\\r\\nConnection: close\\r\\n\\r\\n')\n"
        + "s.recv(200).split(b'\\r\\n')[0].decode()";
  }

  /** A question in the page's list whose text contains {@code text}. */
  static WebElement question(WebDriver d, String text) {
    return waiting(d, 20)
        .until(
            x ->
                x.findElements(By.cssSelector("#approval-list li")).stream()
                    .filter(e -> e.getText().contains(text))
                    .findFirst()
                    .orElse(null));
  }

  @Test
  void signInWatchSandboxesAnswerApprovalsAndVerifyTheAuditInABrowser() throws Exception {
    upload(keyA, sandboxA, "report.txt", "quarterly");
    upload(keyA, sandboxA, "keep.txt", "keep");
    upload(keyA, sandboxA, XSS_FILE, "payload");
    Http.Reply touched =
        http.json(
            "POST",
            "/v1/sandboxes/" + sandboxA + "/exec",
            keyA,
            "{\"command\": " + Wire.JSON.valueToTree("touch " + HOSTILE_NAME) + "}");
    assertThat(touched.status()).as(touched.text()).isEqualTo(200);
    Http.Reply noisy =
        http.json(
            "POST",
            "/v1/sandboxes/" + sandboxA + "/exec",
            keyA,
            "{\"command\": \"printf '<script>window.__xss=2</script>\\\\033]0;pwned\\\\007\\\\033[31mred'\"}");
    assertThat(noisy.status()).as(noisy.text()).isEqualTo(200);

    WebDriver d = chrome();
    try {
      JavascriptExecutor js = (JavascriptExecutor) d;
      d.get(base() + "/console/");
      waitFor(d, By.id("key")).sendKeys(keyA);
      d.findElement(By.id("signin-button")).click();
      waitFor(d, By.cssSelector("tr[data-id='" + sandboxA + "']"));
      assertThat(d.findElement(By.id("who")).getText()).isEqualTo("alpha");
      assertThat(d.findElements(By.cssSelector("tr[data-id='" + sandboxB + "']"))).isEmpty();
      // The engine's CPU and memory figures arrive in the live list (no reload).
      By mem = By.cssSelector("tr[data-id='" + sandboxA + "'] td.mem");
      waiting(d, 30).until(x -> x.findElement(mem).getText().matches("[0-9]+ MiB of 256 MiB"));
      assertThat(d.findElement(By.cssSelector("tr[data-id='" + sandboxA + "'] td.cpu")).getText())
          .matches("[0-9]+\\.[0-9]{2} of 1(\\.0)?");
      JsonNode view = http.get("/v1/sandboxes/" + sandboxA, keyA).json();
      assertThat(view.get("memoryInUseBytes").asLong()).isPositive().isLessThan(256L << 20);
      shot(d, "sandboxes.png");

      d.findElement(By.cssSelector("tr[data-id='" + sandboxA + "']")).click();
      waiting(d, 15).until(x -> x.findElement(By.id("files")).getText().contains(XSS_FILE));
      waiting(d, 15).until(x -> x.findElement(By.id("activity")).getText().contains("<script>"));
      // An execution's output streams into the open page while it runs.
      CompletableFuture<Http.Reply> ticking =
          execAsync("for i in 1 2 3 4; do echo tick$i; sleep 1; done");
      waiting(d, 20).until(x -> x.findElement(By.id("runs")).getText().contains("tick1"));
      assertThat(ticking).as("output shown before the command ended").isNotDone();
      waiting(d, 30)
          .until(
              x -> {
                String run = x.findElement(By.cssSelector("#runs li:first-child")).getText();
                return run.contains("tick4") && run.contains("exit 0");
              });
      assertThat(d.findElement(By.id("runs")).getText()).doesNotContain("\u001b");
      assertThat(ticking.get(30, TimeUnit.SECONDS).status()).isEqualTo(200);
      shot(d, "sandbox.png");

      // Approve from the page: the sandbox's rm then proceeds.
      d.get(base() + "/console/#approvals");
      waitFor(d, By.id("no-approvals"));
      CompletableFuture<Http.Reply> rm = execAsync("rm report.txt && echo removed");
      WebElement question = waitFor(d, By.cssSelector("#approval-list li"));
      assertThat(question.getText()).contains("report.txt").contains("times out in");
      assertThat(d.getTitle()).startsWith("(1)");
      shot(d, "approvals.png");
      question.findElement(By.cssSelector("input.reason")).sendKeys("ok, it is a copy");
      question.findElement(By.cssSelector("button.approve")).click();
      Http.Reply removed = rm.get(60, TimeUnit.SECONDS);
      assertThat(removed.json().get("stdout").asText()).isEqualTo("removed\n");

      // Deny another, whose target is an XSS payload: shown as text, refused in the sandbox.
      CompletableFuture<Http.Reply> rm2 = execAsync("rm " + HOSTILE_NAME);
      WebElement q2 =
          waiting(d, 15)
              .until(
                  x ->
                      x.findElements(By.cssSelector("#approval-list li")).stream()
                          .filter(e -> e.getText().contains(XSS_TARGET))
                          .findFirst()
                          .orElse(null));
      assertThat(q2.getText())
          .doesNotContain("\u001b")
          .doesNotContain("\u0007")
          .doesNotContain("\u202e")
          .contains("\\u202eetats-lla");
      q2.findElement(By.cssSelector("button.deny")).click();
      Http.Reply refused = rm2.get(60, TimeUnit.SECONDS);
      assertThat(refused.status()).as(refused.text()).isEqualTo(403);
      assertThat(refused.errorCode()).isEqualTo("approval_denied");
      Http.Reply still =
          http.json(
              "POST",
              "/v1/sandboxes/" + sandboxA + "/exec",
              keyA,
              "{\"command\": "
                  + Wire.JSON.valueToTree("test -e " + HOSTILE_NAME + " && echo kept")
                  + "}");
      assertThat(still.json().get("stdout").asText()).isEqualTo("kept\n");

      // A network question: approved, the blocked request proceeds through the egress proxy.
      int port = web.getAddress().getPort();
      CompletableFuture<Http.Reply> get = codeAsync(fetch("http://ask.test:" + port + "/approved"));
      WebElement net = question(d, "ask.test:" + port);
      assertThat(net.findElement(By.tagName("strong")).getText()).isEqualTo("network");
      assertThat(http.get("/v1/approvals", keyA).text()).contains("\"kind\":\"network\"");
      shot(d, "approvals-network.png");
      net.findElement(By.cssSelector("input.reason")).sendKeys("docs site");
      net.findElement(By.cssSelector("button.approve")).click();
      Http.Reply got = get.get(90, TimeUnit.SECONDS);
      assertThat(got.status()).as(got.text()).isEqualTo(200);
      assertThat(got.json().get("result").asText()).contains("hello from /approved");

      // Another, whose request carries an XSS payload: shown as text, denied, refused (403).
      CompletableFuture<Http.Reply> hostile =
          codeAsync(rawRequest("deny.test:" + port, "http://deny.test:" + port + XSS_PATH));
      WebElement net2 = question(d, "deny.test:" + port);
      assertThat(net2.getText()).contains(XSS_PATH);
      net2.findElement(By.cssSelector("button.deny")).click();
      Http.Reply denied = hostile.get(90, TimeUnit.SECONDS);
      assertThat(denied.status()).as(denied.text()).isEqualTo(200);
      assertThat(denied.json().get("result").asText()).contains("403");

      // Terminal escapes never reach a question: the proxy refuses the request line (400).
      Http.Reply escapes =
          http.json(
              "POST",
              "/v1/sandboxes/" + sandboxA + "/code",
              keyA,
              "{\"code\": "
                  + Wire.JSON.valueToTree(
                      rawRequest(
                          "deny.test:" + port,
                          "http://deny.test:" + port + "/\\x1b]0;pwned\\x07\\x1b[31m"))
                  + "}");
      assertThat(escapes.json().get("result").asText()).contains("400");
      assertThat(http.get("/v1/approvals", keyA).json().get("approvals")).isEmpty();

      // A host outside the server's ask_hosts is refused without asking anyone.
      Http.Reply outside =
          http.json(
              "POST",
              "/v1/sandboxes/" + sandboxA + "/code",
              keyA,
              "{\"code\": "
                  + Wire.JSON.valueToTree(fetch("http://outside.example:" + port + "/"))
                  + "}");
      assertThat(outside.json().get("result").asText()).isEqualTo("'refused 403'");

      JsonNode decided =
          http.get("/v1/sandboxes/" + sandboxA + "/audit?type=approval.decided", keyA).json();
      assertThat(decided.toString())
          .contains("console:alpha")
          .contains("ok, it is a copy")
          .contains("docs site")
          .contains("deny.test:" + port);
      JsonNode attempts =
          http.get("/v1/sandboxes/" + sandboxA + "/audit?type=network.attempt", keyA).json();
      assertThat(attempts.toString()).contains("APPROVED").contains("DENIED");

      // Audit: filter; the chain's verification is the operator's (the admin's test checks a
      // tampered record is flagged).
      d.get(base() + "/console/#audit");
      waitFor(d, By.id("audit-filter"));
      waiting(d, 15)
          .until(
              x ->
                  !x.findElements(By.cssSelector("#audit-sandbox option[value='" + sandboxA + "']"))
                      .isEmpty());
      d.findElement(By.id("audit-text")).sendKeys("report.txt");
      d.findElement(By.id("audit-filter")).click();
      waiting(d, 15)
          .until(
              x ->
                  x.findElement(By.id("verify"))
                      .getText()
                      .startsWith("The audit chain is verified by the operator"));
      waiting(d, 15)
          .until(
              x ->
                  !x.findElements(By.cssSelector("#audit-list li")).isEmpty()
                      && x.findElement(By.id("audit-list")).getText().contains("report.txt"));
      shot(d, "audit.png");

      // Usable on a phone: the same page at 390x844.
      d.manage().window().setSize(new Dimension(390, 844));
      d.get(base() + "/console/#approvals");
      waitFor(d, By.id("no-approvals"));
      shot(d, "phone.png");

      // Nothing the sandbox controlled ran as markup or script.
      assertThat(d.findElements(By.tagName("img"))).isEmpty();
      assertThat(d.findElements(By.tagName("script")))
          .as("only the console's own two scripts")
          .extracting(e -> String.valueOf(e.getAttribute("src")).replaceAll("^.*/console/", ""))
          .containsExactly("text.js", "app.js");
      assertThat(js.executeScript("return typeof window.__xss")).isEqualTo("undefined");
    } finally {
      d.quit();
    }
  }

  /** The byte offset of the first letter of the second record's type value. */
  static long offsetOfSecondLineType(Path log) throws Exception {
    byte[] all = Files.readAllBytes(log);
    int nl = 0;
    while (nl < all.length && all[nl] != '\n') {
      nl++;
    }
    String second =
        new String(all, nl + 1, Math.min(4096, all.length - nl - 1), StandardCharsets.ISO_8859_1);
    int at = second.indexOf("\"type\":\"");
    assertThat(at).as("the second audit record has a type").isNotNegative();
    return nl + 1 + at + "\"type\":\"".length();
  }

  // ---- HTTP level --------------------------------------------------------------------------

  static HttpResponse<String> send(HttpRequest.Builder b) throws Exception {
    return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  static HttpRequest.Builder req(String path) {
    return HttpRequest.newBuilder(URI.create(base() + path)).timeout(Duration.ofSeconds(30));
  }

  @Test
  void theSessionCookieIsHttpOnlyStrictAndEveryChangeNeedsTheCsrfToken() throws Exception {
    HttpResponse<String> wrong =
        send(
            req("/console/session")
                .header("Content-Type", "application/json")
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"key\":\"ank_0000000000000000_" + "A".repeat(43) + "\"}")));
    assertThat(wrong.statusCode()).isEqualTo(401);

    HttpResponse<String> signIn =
        send(
            req("/console/session")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"key\":\"" + keyA + "\"}")));
    assertThat(signIn.statusCode()).as(signIn.body()).isEqualTo(201);
    String setCookie = signIn.headers().firstValue("Set-Cookie").orElseThrow();
    assertThat(setCookie)
        .contains("HttpOnly", "SameSite=Strict", "Path=/")
        .doesNotContain("Secure");
    assertThat(signIn.headers().firstValue("Content-Security-Policy").orElseThrow())
        .contains("frame-ancestors 'none'", "script-src 'self'");
    String cookie = setCookie.substring(0, setCookie.indexOf(';'));
    String csrf = Wire.JSON.readTree(signIn.body()).get("csrf").asText();
    assertThat(signIn.body()).doesNotContain(keyA);

    assertThat(send(req("/v1/sandboxes").header("Cookie", cookie).GET()).statusCode())
        .isEqualTo(200);
    String extend = "/v1/sandboxes/" + sandboxA + "/extend";
    HttpResponse<String> noToken =
        send(
            req(extend)
                .header("Cookie", cookie)
                .POST(HttpRequest.BodyPublishers.ofString("{\"seconds\": 60}")));
    assertThat(noToken.statusCode()).isEqualTo(403);
    assertThat(noToken.body()).contains("\"csrf\"");
    HttpResponse<String> badToken =
        send(
            req(extend)
                .header("Cookie", cookie)
                .header("X-CSRF-Token", csrf + "x")
                .POST(HttpRequest.BodyPublishers.ofString("{\"seconds\": 60}")));
    assertThat(badToken.statusCode()).isEqualTo(403);
    HttpResponse<String> ok =
        send(
            req(extend)
                .header("Cookie", cookie)
                .header("X-CSRF-Token", csrf)
                .POST(HttpRequest.BodyPublishers.ofString("{\"seconds\": 60}")));
    assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
    HttpResponse<String> destroyNoToken =
        send(req("/v1/sandboxes/" + sandboxA).header("Cookie", cookie).DELETE());
    assertThat(destroyNoToken.statusCode()).isEqualTo(403);

    // Another tenant's sandbox is as absent as an unknown one, through the console too.
    assertThat(send(req("/v1/sandboxes/" + sandboxB).header("Cookie", cookie).GET()).statusCode())
        .isEqualTo(404);
    assertThat(
            send(req("/v1/sandboxes/" + sandboxB)
                    .header("Cookie", cookie)
                    .header("X-CSRF-Token", csrf)
                    .DELETE())
                .statusCode())
        .isEqualTo(404);
    assertThat(http.get("/v1/sandboxes/" + sandboxB, keyB).status()).isEqualTo(200);

    // A forged cookie is nobody; sign-out ends the session and clears the cookie.
    assertThat(
            send(req("/v1/sandboxes").header("Cookie", ConsoleSessions.COOKIE + "=forged").GET())
                .statusCode())
        .isEqualTo(401);
    assertThat(send(req("/console/session").header("Cookie", cookie).DELETE()).statusCode())
        .isEqualTo(403);
    HttpResponse<String> out =
        send(
            req("/console/session").header("Cookie", cookie).header("X-CSRF-Token", csrf).DELETE());
    assertThat(out.statusCode()).isEqualTo(204);
    assertThat(out.headers().firstValue("Set-Cookie").orElseThrow()).contains("Max-Age=0");
    assertThat(send(req("/v1/sandboxes").header("Cookie", cookie).GET()).statusCode())
        .isEqualTo(401);
    assertThat(send(req("/console/session").header("Cookie", cookie).GET()).statusCode())
        .isEqualTo(401);

    // Only the console's own files are served, each with the headers that forbid framing.
    HttpResponse<String> page = send(req("/console/").GET());
    assertThat(page.statusCode()).isEqualTo(200);
    assertThat(page.headers().firstValue("X-Frame-Options")).contains("DENY");
    assertThat(send(req("/console/tenants.db").GET()).statusCode()).isEqualTo(404);
    HttpResponse<String> js = send(req("/console/app.js").GET());
    assertThat(js.statusCode()).isEqualTo(200);
    assertThat(js.headers().firstValue("Content-Type").orElseThrow()).startsWith("text/javascript");
  }

  /** Signs in with {@code key}; the cookie ("name=value") and the CSRF token. */
  static String[] signIn(String key) throws Exception {
    HttpResponse<String> r =
        send(
            req("/console/session")
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"key\":\"" + key + "\"}")));
    assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
    String setCookie = r.headers().firstValue("Set-Cookie").orElseThrow();
    return new String[] {
      setCookie.substring(0, setCookie.indexOf(';')),
      Wire.JSON.readTree(r.body()).get("csrf").asText(),
      r.body()
    };
  }

  @Test
  void theAdminKeySeesEveryTenantNeedsCsrfAndEndsWhenRevoked() throws Exception {
    String admin = running.store().issueAdminKey();
    String[] s = signIn(admin);
    String cookie = s[0];
    String csrf = s[1];
    assertThat(Wire.JSON.readTree(s[2]).get("admin").asBoolean()).isTrue();

    // Every tenant's sandboxes, each with its tenant; another's by id too.
    JsonNode all =
        Wire.JSON.readTree(send(req("/v1/sandboxes").header("Cookie", cookie).GET()).body());
    assertThat(all.findValuesAsText("id")).contains(sandboxA, sandboxB);
    assertThat(all.findValuesAsText("tenant")).contains("alpha", "beta");
    HttpResponse<String> b = send(req("/v1/sandboxes/" + sandboxB).header("Cookie", cookie).GET());
    assertThat(b.statusCode()).isEqualTo(200);
    assertThat(Wire.JSON.readTree(b.body()).get("tenant").asText()).isEqualTo("beta");
    assertThat(
            send(req("/v1/sandboxes/" + sandboxB + "/audit").header("Cookie", cookie).GET())
                .statusCode())
        .isEqualTo(200);
    assertThat(send(req("/v1/approvals").header("Cookie", cookie).GET()).statusCode())
        .isEqualTo(200);
    assertThat(send(req("/v1/sandboxes/sb-unknown").header("Cookie", cookie).GET()).statusCode())
        .isEqualTo(404);

    // A change needs the CSRF token like any session's.
    String extend = "/v1/sandboxes/" + sandboxB + "/extend";
    HttpResponse<String> noToken =
        send(
            req(extend)
                .header("Cookie", cookie)
                .POST(HttpRequest.BodyPublishers.ofString("{\"seconds\": 30}")));
    assertThat(noToken.statusCode()).isEqualTo(403);
    assertThat(noToken.body()).contains("\"csrf\"");
    HttpResponse<String> extended =
        send(
            req(extend)
                .header("Cookie", cookie)
                .header("X-CSRF-Token", csrf)
                .POST(HttpRequest.BodyPublishers.ofString("{\"seconds\": 30}")));
    assertThat(extended.statusCode()).as(extended.body()).isEqualTo(200);

    // Another tenant's question, answered by the admin: audited as console:admin.
    String asking =
        http.created(keyB, "{\"memoryBytes\": 268435456, \"approvals\": \"recommended\"}");
    upload(keyB, asking, "old.txt", "old");
    CompletableFuture<Http.Reply> rm =
        CompletableFuture.supplyAsync(
            () ->
                http.json(
                    "POST",
                    "/v1/sandboxes/" + asking + "/exec",
                    keyB,
                    "{\"command\": \"rm old.txt && echo gone\", \"timeoutSeconds\": 120}"));
    JsonNode question = null;
    for (int i = 0; i < 150 && question == null; i++) {
      JsonNode list =
          Wire.JSON.readTree(send(req("/v1/approvals").header("Cookie", cookie).GET()).body());
      for (JsonNode q : list.get("approvals")) {
        if (q.get("sandboxId").asText().equals(asking)) {
          question = q;
        }
      }
      if (question == null) {
        Thread.sleep(100);
      }
    }
    assertThat(question).as("beta's question reaches the admin").isNotNull();
    assertThat(question.get("tenant").asText()).isEqualTo("beta");
    assertThat(http.get("/v1/approvals", keyA).text()).doesNotContain(asking);
    HttpResponse<String> approved =
        send(
            req("/v1/approvals/" + question.get("id").asText())
                .header("Cookie", cookie)
                .header("X-CSRF-Token", csrf)
                .POST(
                    HttpRequest.BodyPublishers.ofString(
                        "{\"approve\": true, \"reason\": \"admin says yes\"}")));
    assertThat(approved.statusCode()).as(approved.body()).isEqualTo(204);
    assertThat(rm.get(60, TimeUnit.SECONDS).json().get("stdout").asText()).isEqualTo("gone\n");
    assertThat(http.get("/v1/sandboxes/" + asking + "/audit?type=approval.decided", keyB).text())
        .contains("console:admin")
        .contains("admin says yes");
    HttpResponse<String> destroyed =
        send(
            req("/v1/sandboxes/" + asking)
                .header("Cookie", cookie)
                .header("X-CSRF-Token", csrf)
                .DELETE());
    assertThat(destroyed.statusCode()).isEqualTo(204);
    assertThat(http.get("/v1/sandboxes/" + asking, keyB).status()).isEqualTo(404);

    // The admin watches and answers; running code or making sandboxes stays with tenant keys.
    HttpResponse<String> exec =
        send(
            req("/v1/sandboxes/" + sandboxB + "/exec")
                .header("Cookie", cookie)
                .header("X-CSRF-Token", csrf)
                .POST(HttpRequest.BodyPublishers.ofString("{\"command\": \"id\"}")));
    assertThat(exec.statusCode()).isEqualTo(403);
    assertThat(exec.body()).contains("\"forbidden\"");
    assertThat(
            send(req("/v1/sandboxes")
                    .header("Cookie", cookie)
                    .header("X-CSRF-Token", csrf)
                    .POST(HttpRequest.BodyPublishers.ofString("{}")))
                .statusCode())
        .isEqualTo(403);
    // The admin key is no API key.
    assertThat(http.get("/v1/sandboxes", admin).status()).isEqualTo(401);

    // A tenant's session still sees only its own: beta's list has no alpha sandbox.
    String[] beta = signIn(keyB);
    JsonNode mine =
        Wire.JSON.readTree(send(req("/v1/sandboxes").header("Cookie", beta[0]).GET()).body());
    assertThat(mine.findValuesAsText("id")).contains(sandboxB).doesNotContain(sandboxA);
    assertThat(mine.findValuesAsText("tenant")).containsOnly("beta");

    // Revoked: the open session ends at its next request, and the key no longer signs in.
    assertThat(running.store().revoke(admin)).isTrue();
    assertThat(send(req("/v1/sandboxes").header("Cookie", cookie).GET()).statusCode())
        .isEqualTo(401);
    assertThat(
            send(req("/console/session")
                    .header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"key\":\"" + admin + "\"}")))
                .statusCode())
        .isEqualTo(401);
  }

  @Test
  void theAdminSeesEveryTenantsSandboxesInTheBrowser() throws Exception {
    String admin = running.store().issueAdminKey();
    WebDriver d = chrome();
    try {
      d.get(base() + "/console/");
      waitFor(d, By.id("key")).sendKeys(admin);
      d.findElement(By.id("signin-button")).click();
      waitFor(d, By.cssSelector("tr[data-id='" + sandboxB + "']"));
      waitFor(d, By.cssSelector("tr[data-id='" + sandboxA + "']"));
      assertThat(d.findElement(By.id("who")).getText()).isEqualTo("admin (all tenants)");
      assertThat(
              d.findElement(By.cssSelector("tr[data-id='" + sandboxB + "'] td.tenant")).getText())
          .isEqualTo("beta");
      waiting(d, 30)
          .until(
              x ->
                  x.findElements(By.cssSelector("td.mem")).stream()
                      .noneMatch(e -> e.getText().startsWith("—")));
      shot(d, "admin.png");

      // The admin's audit page verifies the server's whole chain: a tampered record is flagged
      // with its line.
      d.get(base() + "/console/#audit");
      waitFor(d, By.id("audit-filter"));
      waiting(d, 15)
          .until(
              x ->
                  !x.findElements(By.cssSelector("#audit-sandbox option[value='" + sandboxA + "']"))
                      .isEmpty());
      d.findElement(By.id("audit-filter")).click();
      waiting(d, 30)
          .until(x -> x.findElement(By.id("verify")).getText().startsWith("Chain intact"));
      Path log = AuditLog.shared().dir().resolve("events.jsonl");
      long offset = offsetOfSecondLineType(log);
      try (RandomAccessFile f = new RandomAccessFile(log.toFile(), "rw")) {
        f.seek(offset);
        int was = f.read();
        f.seek(offset);
        f.write(
            Character.isUpperCase(was) ? Character.toLowerCase(was) : Character.toUpperCase(was));
        try {
          d.findElement(By.id("audit-filter")).click();
          waiting(d, 30)
              .until(
                  x ->
                      x.findElement(By.id("verify"))
                          .getText()
                          .startsWith("Chain BROKEN at line 2"));
          shot(d, "audit-broken.png");
        } finally {
          f.seek(offset);
          f.write(was);
        }
      }
    } finally {
      d.quit();
      running.store().revoke(admin);
    }
  }

  /**
   * Issue 42 (18): a tenant that requires an approver; an operator signed in with an approver key
   * sees the sandbox's question without a reload and approves it from the page (the sandbox's rm
   * then proceeds), and the page offers no actions, executions or files to an approver.
   */
  @Test
  void anApproverSignedInToTheBrowserSeesAndAnswersTheTenantsQuestions() throws Exception {
    String agent = running.key(new Tenant("gamma", 1, 1L << 30, 1, 1000, null, null));
    assertThat(running.store().requireApproverRole("gamma", true)).isTrue();
    String approver = running.store().issueKey("gamma", null, KeyRole.APPROVER);
    String sandbox =
        http.created(agent, "{\"memoryBytes\": 268435456, \"approvals\": \"recommended\"}");
    upload(agent, sandbox, "draft.txt", "draft");
    WebDriver d = chrome();
    try {
      d.get(base() + "/console/");
      waitFor(d, By.id("key")).sendKeys(approver);
      d.findElement(By.id("signin-button")).click();
      waitFor(d, By.id("no-approvals"));
      assertThat(d.findElement(By.id("who")).getText()).isEqualTo("gamma");
      CompletableFuture<Http.Reply> rm =
          CompletableFuture.supplyAsync(
              () ->
                  http.json(
                      "POST",
                      "/v1/sandboxes/" + sandbox + "/exec",
                      agent,
                      "{\"command\": \"rm draft.txt && echo removed\", \"timeoutSeconds\": 120}"));
      WebElement q = question(d, "draft.txt");
      // The sandbox's own agent key may not answer it.
      String id = q.getAttribute("data-id");
      assertThat(http.json("POST", "/v1/approvals/" + id, agent, "{\"approve\": true}").status())
          .isEqualTo(403);
      q.findElement(By.cssSelector("button.approve")).click();
      assertThat(rm.get(60, TimeUnit.SECONDS).json().get("stdout").asText()).isEqualTo("removed\n");

      d.get(base() + "/console/#sandboxes");
      waitFor(d, By.cssSelector("tr[data-id='" + sandbox + "']")).click();
      waiting(d, 15).until(x -> x.findElement(By.id("activity")).getText().contains("exec"));
      assertThat(d.findElement(By.cssSelector("#detail .actions")).isDisplayed()).isFalse();
      assertThat(d.findElement(By.id("files")).isDisplayed()).isFalse();
      assertThat(d.findElement(By.id("runs")).isDisplayed()).isFalse();
    } finally {
      d.quit();
      http.delete("/v1/sandboxes/" + sandbox, agent);
    }
  }
}
