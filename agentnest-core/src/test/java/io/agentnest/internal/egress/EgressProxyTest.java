package io.agentnest.internal.egress;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalHandler;
import io.agentnest.ApprovalRequest;
import io.agentnest.IpAddresses;
import io.agentnest.NetworkEvent;
import io.agentnest.NetworkEvent.Decision;
import io.agentnest.NetworkPolicy;
import io.agentnest.spi.support.Percentiles;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import javax.net.ssl.ExtendedSSLSession;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.assertj.core.api.Assertions;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The egress proxy against real servers on 127.0.0.1; test names resolve only to loopback. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EgressProxyTest {
  private static final String SANDBOX = "sb-test";
  private static final Duration WAIT = Duration.ofSeconds(10);

  private final List<AutoCloseable> closeables = new ArrayList<>();
  private final BlockingQueue<NetworkEvent> events = new LinkedBlockingQueue<>();
  private EchoServer echo;
  private StaticResolver resolver;

  @BeforeEach
  void startServers() throws IOException {
    echo = track(new EchoServer());
    resolver =
        StaticResolver.of("allowed.test", "127.0.0.1")
            .with("web.test", "127.0.0.1")
            .with("files.pypi.test", "127.0.0.1")
            .with("ask.test", "127.0.0.1")
            .with("evil-pypi.org", "127.0.0.1")
            .with("pypi.org", "127.0.0.1")
            .with("loop.test", "127.0.0.1")
            .with("private.test", "10.1.2.3")
            .with("metadata.test", "169.254.169.254")
            .with("mapped-metadata.test", "::ffff:169.254.169.254")
            .with("v6loop.test", "::1")
            .with("mixed.test", "127.0.0.1", "10.1.2.3");
  }

  @AfterEach
  void closeServers() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
  }

  private <T extends AutoCloseable> T track(T c) {
    closeables.add(c);
    return c;
  }

  // ---------------------------------------------------------------------------------------------
  // CONNECT

  @Test
  void connectToAnAllowedNameTunnelsBothWaysAndCountsBytes() {
    EgressProxy proxy = proxy(allowLoopback().allow("allowed.test:" + echo.port()));
    String hello = hello("allowed.test");
    String response = handle(proxy, connect("allowed.test:" + echo.port()) + hello);

    assertThat(response).isEqualTo("HTTP/1.1 200 Connection established\r\n\r\n" + hello);
    NetworkEvent e = onlyEvent();
    assertThat(e.sandboxId()).isEqualTo(SANDBOX);
    assertThat(e.method()).isEqualTo("CONNECT");
    assertThat(e.host()).isEqualTo("allowed.test");
    assertThat(e.port()).isEqualTo(echo.port());
    assertThat(e.target()).isEqualTo("allowed.test:" + echo.port());
    assertThat(e.resolvedAddress()).isEqualTo("127.0.0.1");
    assertThat(e.decision()).isEqualTo(Decision.ALLOWED);
    assertThat(e.rule()).isEqualTo("allowed.test:" + echo.port());
    assertThat(e.bytesUp()).isEqualTo(hello.length());
    assertThat(e.bytesDown()).isEqualTo(hello.length());
    assertThat(e.duration()).isPositive();
    assertThat(e.time()).isBeforeOrEqualTo(Instant.now());
  }

  @Test
  void connectNamesAreNormalisedBeforeMatching() {
    EgressProxy proxy = proxy(allowLoopback().allow("allowed.test:" + echo.port()));
    String response =
        handle(proxy, connect("ALLOWED.Test.:" + echo.port()) + hello("allowed.test"));
    assertThat(response).startsWith("HTTP/1.1 200 ");
    assertThat(onlyEvent().host()).isEqualTo("allowed.test");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {"127.0.0.1", "[::ffff:127.0.0.1]", "[::1]", "127.1", "2130706433", "0x7f.0.0.1"})
  void connectToAnIpLiteralIsRefusedWithoutAnAddressAllowance(String host) {
    EgressProxy proxy = proxy(allow("allowed.test:" + echo.port()));
    Response r = Response.parse(handle(proxy, connect(host + ":" + echo.port())));

    assertThat(r.status).isEqualTo(403);
    assertThat(r.header("x-agentnest-denied")).isNotNull();
    assertThat(r.body).startsWith("agentnest egress: ").contains("IP address");
    NetworkEvent e = onlyEvent();
    assertThat(e.decision()).isEqualTo(Decision.DENIED);
    assertThat(e.rule()).isEqualTo("ip-literal");
    assertThat(e.bytesUp()).isZero();
    assertThat(e.bytesDown()).isZero();
    assertThat(echo.accepted()).isZero();
  }

  @ParameterizedTest
  @ValueSource(strings = {"[::1]", "127.1", "2130706433", "[127.0.0.1]", "0177.0.0.1"})
  void ipLiteralsOutsideTheAllowanceOrNonCanonicalAreRefusedEvenWithOne(String host) {
    EgressProxy proxy = proxy(allowLoopback());
    Response r = Response.parse(handle(proxy, connect(host + ":" + echo.port())));
    assertThat(r.status).isEqualTo(403);
    assertThat(onlyEvent().rule()).isEqualTo("ip-literal");
    assertThat(echo.accepted()).isZero();
  }

  @Test
  void ipLiteralCoveredByAllowAddressIsAllowedOnAnyPort() {
    EgressProxy proxy = proxy(allowLoopback());
    String response = handle(proxy, connect("127.0.0.1:" + echo.port()) + "abc");
    assertThat(response).isEqualTo("HTTP/1.1 200 Connection established\r\n\r\nabc");
    NetworkEvent e = onlyEvent();
    assertThat(e.decision()).isEqualTo(Decision.ALLOWED);
    assertThat(e.rule()).isEqualTo("127.0.0.0/8");
    assertThat(e.host()).isEqualTo("127.0.0.1");
  }

  @Test
  void unbracketedIpv6IsABadRequest() {
    Response r = Response.parse(handle(proxy(allowLoopback()), connect("::1:" + echo.port())));
    assertThat(r.status).isEqualTo(400);
    assertThat(r.body).contains("brackets");
    assertThat(onlyEvent().rule()).isEqualTo("bad-request");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "loop.test",
        "private.test",
        "metadata.test",
        "mapped-metadata.test",
        "v6loop.test",
        "mixed.test"
      })
  void allowlistedNameResolvingToANonPublicAddressIsRefused(String name) {
    // The name is on the allowlist, but there is no allowAddress: a rebinding attempt.
    EgressProxy proxy = proxy(allow(name + ":" + echo.port()));
    Response r = Response.parse(handle(proxy, connect(name + ":" + echo.port())));

    assertThat(r.status).isEqualTo(403);
    assertThat(r.header("x-agentnest-denied")).contains(name, "resolves to");
    NetworkEvent e = onlyEvent();
    assertThat(e.decision()).isEqualTo(Decision.DENIED);
    assertThat(e.rule()).isEqualTo("non-public-address");
    assertThat(e.resolvedAddress()).isNotNull();
    assertThat(e.reason()).contains("resolves to " + e.resolvedAddress());
    assertThat(echo.accepted()).isZero();
  }

  @Test
  void metadataAddressIsNamedInTheRefusal() {
    EgressProxy proxy = proxy(allow("metadata.test:80"));
    Response r = Response.parse(handle(proxy, connect("metadata.test:80")));
    assertThat(r.status).isEqualTo(403);
    assertThat(r.body).contains("169.254.169.254", "link-local");
    assertThat(onlyEvent().resolvedAddress()).isEqualTo("169.254.169.254");
  }

  @Test
  void anyNonPublicAddressRefusesTheNameEvenIfAnotherIsAllowed() {
    // 127.0.0.1 is allowed explicitly, 10.1.2.3 is not: the name is refused as a whole.
    EgressProxy proxy =
        proxy(
            NetworkPolicy.builder().allow("mixed.test:" + echo.port()).allowAddress("127.0.0.0/8"));
    Response r = Response.parse(handle(proxy, connect("mixed.test:" + echo.port())));
    assertThat(r.status).isEqualTo(403);
    assertThat(onlyEvent().resolvedAddress()).isEqualTo("10.1.2.3");
    assertThat(echo.accepted()).isZero();
  }

  @Test
  void resolvesOnceAndConnectsToTheValidatedAddress() {
    AtomicInteger calls = new AtomicInteger();
    Resolver rebinding =
        host -> {
          // First answer loopback (allowed explicitly), then a private address a rebinding DNS
          // server would hand out: the proxy must never ask again.
          return List.of(
              IpAddresses.parseLiteral(calls.incrementAndGet() == 1 ? "127.0.0.1" : "10.9.9.9")
                  .orElseThrow());
        };
    EgressProxy proxy =
        new EgressProxy(
            policy(allow("loop.test:" + echo.port()).allowAddress("127.0.0.1")),
            rebinding,
            events::add,
            null,
            SANDBOX);
    String hello = hello("loop.test");
    String response = handle(proxy, connect("loop.test:" + echo.port()) + hello);
    assertThat(response).endsWith("\r\n\r\n" + hello);
    assertThat(calls).hasValue(1);
    NetworkEvent e = onlyEvent();
    assertThat(e.resolvedAddress()).isEqualTo("127.0.0.1");
    assertThat(e.rule()).isEqualTo("loop.test:" + echo.port());
    assertThat(echo.accepted()).isEqualTo(1);
  }

  @Test
  void allowedNameOnAnotherPortIsRefused() {
    EgressProxy proxy = proxy(allow("allowed.test:" + echo.port()));
    int other = echo.port() == 65535 ? 65534 : echo.port() + 1;
    Response r = Response.parse(handle(proxy, connect("allowed.test:" + other)));
    assertThat(r.status).isEqualTo(403);
    assertThat(r.header("x-agentnest-denied"))
        .isEqualTo("allowed.test:" + other + " is not on the allowlist");
    assertThat(onlyEvent().rule()).isEqualTo("not-allowlisted");
  }

  @Test
  void ruleWithoutPortAllowsOnlyTheDefaultPorts() {
    EgressProxy proxy = proxy(allow("allowed.test"));
    Response r = Response.parse(handle(proxy, connect("allowed.test:" + echo.port())));
    assertThat(r.status).isEqualTo(403);
    assertThat(onlyEvent().rule()).isEqualTo("not-allowlisted");
    assertThat(echo.accepted()).isZero();
  }

  @ParameterizedTest
  @ValueSource(strings = {"evil-pypi.org:443", "pypi.org:443", "evilpypi.org:443"})
  void wildcardDoesNotCoverLookalikesOrTheBareDomain(String target) {
    EgressProxy proxy = proxy(allow("*.pypi.org"));
    Response r = Response.parse(handle(proxy, connect(target)));
    assertThat(r.status).isEqualTo(403);
    assertThat(r.body).isEqualTo("agentnest egress: " + target + " is not on the allowlist\n");
    NetworkEvent e = onlyEvent();
    assertThat(e.decision()).isEqualTo(Decision.DENIED);
    assertThat(e.rule()).isEqualTo("not-allowlisted");
  }

  @Test
  void aNameTooDeepBelowAWildcardIsRefusedWithWhatToChange() {
    EgressProxy proxy = proxy(allow("*.pypi.org"));
    Response r = Response.parse(handle(proxy, connect("a.b.c.d.pypi.org:443")));
    assertThat(r.status).isEqualTo(403);
    assertThat(r.header("x-agentnest-denied"))
        .isEqualTo(
            "a.b.c.d.pypi.org:443 is not allowed: a.b.c.d.pypi.org is more than 3 labels below"
                + " *.pypi.org (deep names can carry data out through lookups): name it, or add a"
                + " wildcard closer to it");
    assertThat(onlyEvent().rule()).isEqualTo("not-allowlisted");
  }

  @Test
  void wildcardCoversSubdomains() {
    EgressProxy proxy = proxy(allowLoopback().allow("*.pypi.test:" + echo.port()));
    String response =
        handle(proxy, connect("files.pypi.test:" + echo.port()) + hello("files.pypi.test"));
    assertThat(response).startsWith("HTTP/1.1 200 ");
    assertThat(onlyEvent().rule()).isEqualTo("*.pypi.test:" + echo.port());
  }

  @Test
  void noneRefusesEverything() {
    EgressProxy proxy = proxy(NetworkPolicy.none().toBuilder());
    Response r = Response.parse(handle(proxy, connect("allowed.test:443")));
    assertThat(r.status).isEqualTo(403);
    assertThat(onlyEvent().decision()).isEqualTo(Decision.DENIED);
  }

  @Test
  void unreachableUpstreamIs502AndStillOneEvent() throws IOException {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0, 1, loopback())) {
      closedPort = s.getLocalPort();
    }
    EgressProxy proxy = proxy(allowLoopback().allow("allowed.test:" + closedPort));
    Response r = Response.parse(handle(proxy, connect("allowed.test:" + closedPort)));
    assertThat(r.status).isEqualTo(502);
    assertThat(r.body).contains("cannot connect to allowed.test:" + closedPort);
    NetworkEvent e = onlyEvent();
    assertThat(e.decision()).isEqualTo(Decision.ALLOWED);
    assertThat(e.reason()).contains("cannot connect");
    assertThat(e.resolvedAddress()).isEqualTo("127.0.0.1");
  }

  @Test
  void unresolvableNameIs502() {
    EgressProxy proxy = proxy(allow("nowhere.test:443"));
    Response r = Response.parse(handle(proxy, connect("nowhere.test:443")));
    assertThat(r.status).isEqualTo(502);
    assertThat(onlyEvent().reason()).contains("cannot resolve nowhere.test");
  }

  // ---------------------------------------------------------------------------------------------
  // Approval (ASK mode)

  @Test
  void askModeApprovedTunnelIsRecordedAsApproved() {
    AtomicReference<ApprovalRequest> asked = new AtomicReference<>();
    ApprovalHandler handler =
        request -> {
          asked.set(request);
          return CompletableFuture.completedFuture(
              new ApprovalDecision(true, "looks fine", "alice"));
        };
    EgressProxy proxy = proxy(ask(allowLoopback(), Duration.ofSeconds(5)), handler);
    String hello = hello("ask.test");
    String response = handle(proxy, connect("ask.test:" + echo.port()) + hello);

    assertThat(response).isEqualTo("HTTP/1.1 200 Connection established\r\n\r\n" + hello);
    assertThat(asked.get().sandboxId()).isEqualTo(SANDBOX);
    assertThat(asked.get().kind()).isEqualTo("network");
    assertThat(asked.get().target()).isEqualTo("ask.test:" + echo.port());
    assertThat(asked.get().detail()).isEqualTo("CONNECT ask.test:" + echo.port());
    assertThat(asked.get().requestedAt()).isNotNull();
    NetworkEvent e = onlyEvent();
    assertThat(e.decision()).isEqualTo(Decision.APPROVED);
    assertThat(e.rule()).isEqualTo("approval");
    assertThat(e.reason()).contains("alice", "looks fine");
    assertThat(e.bytesUp()).isEqualTo(hello.length());
    assertThat(e.bytesDown()).isEqualTo(hello.length());
  }

  @Test
  void askModeStillChecksAddressesOfApprovedNames() {
    // Approval covers the name, not the address: without allowAddress, loopback stays refused.
    EgressProxy proxy =
        proxy(ask(NetworkPolicy.builder(), Duration.ofSeconds(5)), ApprovalHandler.allowAll());
    Response r = Response.parse(handle(proxy, connect("ask.test:" + echo.port())));
    assertThat(r.status).isEqualTo(403);
    assertThat(onlyEvent().rule()).isEqualTo("non-public-address");
    assertThat(echo.accepted()).isZero();
  }

  @Test
  void askModeDeniedIsRefused() {
    ApprovalHandler handler =
        request -> CompletableFuture.completedFuture(ApprovalDecision.deny("not today"));
    EgressProxy proxy = proxy(ask(allowLoopback(), Duration.ofSeconds(5)), handler);
    Response r = Response.parse(handle(proxy, connect("ask.test:" + echo.port())));

    assertThat(r.status).isEqualTo(403);
    assertThat(r.body).contains("not today");
    NetworkEvent e = onlyEvent();
    assertThat(e.decision()).isEqualTo(Decision.DENIED);
    assertThat(e.rule()).isEqualTo("approval-denied");
    assertThat(echo.accepted()).isZero();
  }

  @Test
  void anApprovalIsRememberedForTheSandboxsLifeAndLaterUsesSaySo() {
    AtomicInteger asked = new AtomicInteger();
    ApprovalHandler handler =
        request -> {
          asked.incrementAndGet();
          return CompletableFuture.completedFuture(new ApprovalDecision(true, "fine", "alice"));
        };
    EgressProxy proxy = proxy(ask(allowLoopback(), WAIT), handler);
    for (int i = 0; i < 3; i++) {
      assertThat(handle(proxy, connect("ask.test:" + echo.port()) + hello("ask.test")))
          .startsWith("HTTP/1.1 200");
    }

    assertThat(asked).hasValue(1);
    List<NetworkEvent> all = new ArrayList<>(events);
    assertThat(all)
        .extracting(NetworkEvent::rule)
        .containsExactly("approval", "approval-remembered", "approval-remembered");
    assertThat(all).extracting(NetworkEvent::remembered).containsExactly(false, true, true);
    assertThat(all).allMatch(e -> e.decision() == Decision.APPROVED);
    assertThat(all.get(2).reason()).contains("alice", "fine", "remembered for this sandbox");
  }

  @Test
  void aDenialIsRememberedAndAnotherHostIsAskedAbout() {
    AtomicInteger asked = new AtomicInteger();
    ApprovalHandler handler =
        request -> {
          asked.incrementAndGet();
          return CompletableFuture.completedFuture(new ApprovalDecision(false, "no", "bob"));
        };
    EgressProxy proxy = proxy(ask(allowLoopback(), WAIT), handler);
    Response first = Response.parse(handle(proxy, connect("ask.test:" + echo.port())));
    Response second = Response.parse(handle(proxy, connect("ask.test:" + echo.port())));
    Response otherHost = Response.parse(handle(proxy, connect("web.test:" + echo.port())));

    assertThat(first.status).isEqualTo(403);
    assertThat(second.status).isEqualTo(403);
    assertThat(second.body).contains("denied by bob: no (remembered for this sandbox)");
    assertThat(otherHost.status).isEqualTo(403);
    assertThat(asked).hasValue(2);
    assertThat(new ArrayList<>(events))
        .extracting(NetworkEvent::rule)
        .containsExactly("approval-denied", "approval-denied-remembered", "approval-denied");
    assertThat(echo.accepted()).isZero();
  }

  @Test
  void withRememberingOffEveryConnectionAsksAgain() {
    AtomicInteger asked = new AtomicInteger();
    ApprovalHandler handler =
        request -> {
          asked.incrementAndGet();
          return CompletableFuture.completedFuture(ApprovalDecision.allow("ok"));
        };
    EgressProxy proxy = proxy(ask(allowLoopback(), WAIT).rememberDecisions(false), handler);
    for (int i = 0; i < 3; i++) {
      assertThat(handle(proxy, connect("ask.test:" + echo.port()) + hello("ask.test")))
          .startsWith("HTTP/1.1 200");
    }
    assertThat(asked).hasValue(3);
    assertThat(new ArrayList<>(events)).extracting(NetworkEvent::rule).containsOnly("approval");
  }

  @Test
  void aTimeoutIsNotADecisionAndIsAskedAgain() {
    AtomicInteger asked = new AtomicInteger();
    ApprovalHandler handler =
        request ->
            asked.incrementAndGet() == 1
                ? new CompletableFuture<>()
                : CompletableFuture.completedFuture(ApprovalDecision.allow("now yes"));
    EgressProxy proxy = proxy(ask(allowLoopback(), Duration.ofMillis(200)), handler);
    assertThat(Response.parse(handle(proxy, connect("ask.test:" + echo.port()))).status)
        .isEqualTo(403);
    assertThat(handle(proxy, connect("ask.test:" + echo.port()) + hello("ask.test")))
        .startsWith("HTTP/1.1 200");
    assertThat(asked).hasValue(2);
    assertThat(new ArrayList<>(events))
        .extracting(NetworkEvent::rule)
        .containsExactly("approval-timeout", "approval");
  }

  @Test
  void concurrentConnectionsToOneTargetWaitForOneQuestion() throws Exception {
    AtomicInteger asked = new AtomicInteger();
    CompletableFuture<ApprovalDecision> answer = new CompletableFuture<>();
    ApprovalHandler handler =
        request -> {
          asked.incrementAndGet();
          return answer;
        };
    EgressProxy proxy = proxy(ask(allowLoopback(), WAIT), handler);
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<String>> results = new ArrayList<>();
      for (int i = 0; i < 4; i++) {
        results.add(
            pool.submit(
                () -> handle(proxy, connect("ask.test:" + echo.port()) + hello("ask.test"))));
      }
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (asked.get() == 0 && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      Thread.sleep(200); // the other three connections reach the pending question meanwhile
      answer.complete(ApprovalDecision.allow("once for all"));
      for (Future<String> f : results) {
        assertThat(f.get(WAIT.toSeconds(), TimeUnit.SECONDS)).startsWith("HTTP/1.1 200");
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(asked).hasValue(1);
    assertThat(new ArrayList<>(events)).filteredOn(NetworkEvent::remembered).hasSize(3);
  }

  @Test
  void askModeTimeoutDeniesAndCancelsTheQuestion() {
    CompletableFuture<ApprovalDecision> never = new CompletableFuture<>();
    EgressProxy proxy = proxy(ask(allowLoopback(), Duration.ofMillis(200)), request -> never);
    long t0 = System.nanoTime();
    Response r = Response.parse(handle(proxy, connect("ask.test:" + echo.port())));
    long ms = (System.nanoTime() - t0) / 1_000_000;

    assertThat(r.status).isEqualTo(403);
    assertThat(r.body).contains("no approval arrived within");
    assertThat(ms).isBetween(150L, 5_000L);
    assertThat(never).isCancelled();
    NetworkEvent e = onlyEvent();
    assertThat(e.decision()).isEqualTo(Decision.DENIED);
    assertThat(e.rule()).isEqualTo("approval-timeout");
  }

  @Test
  void askModeHandlerBlockingSynchronouslyStillTimesOut() {
    ApprovalHandler blocking =
        request -> {
          try {
            Thread.sleep(20_000);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
          return CompletableFuture.completedFuture(ApprovalDecision.allow("too late"));
        };
    EgressProxy proxy = proxy(ask(allowLoopback(), Duration.ofMillis(200)), blocking);
    Response r = Response.parse(handle(proxy, connect("ask.test:" + echo.port())));
    assertThat(r.status).isEqualTo(403);
    assertThat(onlyEvent().rule()).isEqualTo("approval-timeout");
  }

  @Test
  void askModeWithoutHandlerOrWithAFailingHandlerDenies() {
    EgressProxy none = proxy(ask(allowLoopback(), Duration.ofSeconds(1)), null);
    assertThat(Response.parse(handle(none, connect("ask.test:" + echo.port()))).status)
        .isEqualTo(403);
    assertThat(onlyEvent().reason()).contains("no approval handler");

    EgressProxy failing =
        proxy(
            ask(allowLoopback(), Duration.ofSeconds(1)),
            request -> {
              throw new IllegalStateException("boom");
            });
    assertThat(Response.parse(handle(failing, connect("ask.test:" + echo.port()))).status)
        .isEqualTo(403);
    assertThat(onlyEvent().reason()).contains("boom");

    EgressProxy denyAll =
        proxy(ask(allowLoopback(), Duration.ofSeconds(1)), ApprovalHandler.denyAll());
    assertThat(Response.parse(handle(denyAll, connect("ask.test:" + echo.port()))).status)
        .isEqualTo(403);
    assertThat(onlyEvent().rule()).isEqualTo("approval-denied");
    assertThat(echo.accepted()).isZero();
  }

  @Test
  void allowlistedNamesAreNotAskedAbout() {
    AtomicInteger asked = new AtomicInteger();
    ApprovalHandler handler =
        request -> {
          asked.incrementAndGet();
          return CompletableFuture.completedFuture(ApprovalDecision.deny("no"));
        };
    EgressProxy proxy =
        proxy(ask(allowLoopback().allow("allowed.test:" + echo.port()), WAIT), handler);
    assertThat(handle(proxy, connect("allowed.test:" + echo.port()) + hello("allowed.test")))
        .startsWith("HTTP/1.1 200");
    assertThat(asked).hasValue(0);
    assertThat(onlyEvent().decision()).isEqualTo(Decision.ALLOWED);
  }

  // ---------------------------------------------------------------------------------------------
  // Plain HTTP

  @Test
  void plainHttpIsForwardedInOriginFormWithoutHopByHopHeaders() throws Exception {
    HttpOrigin origin = track(new HttpOrigin());
    EgressProxy proxy = proxy(allowLoopback().allow("web.test:" + origin.port()));
    String target = "web.test:" + origin.port();
    String response =
        handle(
            proxy,
            "GET http://"
                + target
                + "/path/x?q=1 HTTP/1.1\r\n"
                + "Host: WEB.test:"
                + origin.port()
                + "\r\n"
                + "User-Agent: egress-test\r\n"
                + "Proxy-Authorization: Basic c2VjcmV0\r\n"
                + "Proxy-Connection: keep-alive\r\n"
                + "Connection: keep-alive, X-Hop\r\n"
                + "X-Hop: drop me\r\n"
                + "Keep-Alive: timeout=5\r\n"
                + "Accept: */*\r\n\r\n");

    Recorded req = origin.take();
    assertThat(req.requestLine).isEqualTo("GET /path/x?q=1 HTTP/1.1");
    assertThat(req.headers)
        .containsEntry("host", target)
        .containsEntry("connection", "close")
        .containsEntry("user-agent", "egress-test")
        .containsEntry("accept", "*/*")
        .doesNotContainKeys("proxy-authorization", "proxy-connection", "x-hop", "keep-alive");

    Response r = Response.parse(response);
    assertThat(r.status).isEqualTo(200);
    assertThat(r.header("connection")).isEqualTo("close");
    assertThat(r.header("keep-alive")).isNull();
    assertThat(r.header("x-origin")).isEqualTo("yes");
    assertThat(r.body).isEqualTo("hello from origin");

    NetworkEvent e = onlyEvent();
    assertThat(e.method()).isEqualTo("GET");
    assertThat(e.decision()).isEqualTo(Decision.ALLOWED);
    assertThat(e.host()).isEqualTo("web.test");
    assertThat(e.bytesDown()).isEqualTo(origin.lastResponseBytes());
    assertThat(e.bytesUp()).isEqualTo(req.rawBytes);
  }

  @Test
  void plainHttpWithoutHostHeaderGetsOneAndBodiesAreForwarded() throws Exception {
    HttpOrigin origin = track(new HttpOrigin());
    EgressProxy proxy = proxy(allowLoopback().allow("web.test:" + origin.port()));
    String url = "http://web.test:" + origin.port() + "/upload";

    String fixed =
        handle(proxy, "POST " + url + " HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world");
    assertThat(Response.parse(fixed).status).isEqualTo(200);
    Recorded a = origin.take();
    assertThat(a.requestLine).isEqualTo("POST /upload HTTP/1.1");
    assertThat(a.headers).containsEntry("host", "web.test:" + origin.port());
    assertThat(a.body).isEqualTo("hello world");
    assertThat(onlyEvent().bytesUp()).isEqualTo(a.rawBytes);

    String chunked =
        handle(
            proxy,
            "POST "
                + url
                + " HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n");
    assertThat(Response.parse(chunked).status).isEqualTo(200);
    Recorded b = origin.take();
    assertThat(b.headers).containsEntry("transfer-encoding", "chunked");
    assertThat(b.body).isEqualTo("hello world");
    onlyEvent();
  }

  @Test
  void chunkedResponsesAndLargeBodiesStreamBack() throws Exception {
    HttpOrigin origin = track(new HttpOrigin());
    EgressProxy proxy = proxy(allowLoopback().allow("web.test:" + origin.port()));
    String response =
        handle(proxy, "GET http://web.test:" + origin.port() + "/chunked HTTP/1.1\r\n\r\n");
    Response r = Response.parse(response);
    assertThat(r.status).isEqualTo(200);
    assertThat(r.header("transfer-encoding")).isEqualTo("chunked");
    assertThat(r.body).isEqualTo("3\r\nabc\r\n0\r\n\r\n");
    onlyEvent();
    assertThat(origin.take().requestLine).isEqualTo("GET /chunked HTTP/1.1");

    String interim =
        handle(
            proxy,
            "POST http://web.test:"
                + origin.port()
                + "/continue HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok");
    assertThat(interim)
        .startsWith("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n")
        .contains("Connection: close\r\n")
        .endsWith("\r\n\r\ndone");
    assertThat(origin.take().headers).containsEntry("expect", "100-continue");
    onlyEvent();

    String big = handle(proxy, "GET http://web.test:" + origin.port() + "/big HTTP/1.1\r\n\r\n");
    Response rb = Response.parse(big);
    assertThat(rb.body).hasSize(HttpOrigin.BIG);
    assertThat(onlyEvent().bytesDown()).isGreaterThan(HttpOrigin.BIG);
  }

  @Test
  void hostHeaderDifferentFromTheTargetIsRefused() throws Exception {
    HttpOrigin origin = track(new HttpOrigin());
    EgressProxy proxy = proxy(allowLoopback().allow("web.test:" + origin.port()));
    for (String host :
        List.of(
            "evil.test:" + origin.port(),
            "web.test",
            "web.test:1",
            "127.0.0.1:" + origin.port(),
            "")) {
      Response r =
          Response.parse(
              handle(
                  proxy,
                  "GET http://web.test:"
                      + origin.port()
                      + "/ HTTP/1.1\r\nHost: "
                      + host
                      + "\r\n\r\n"));
      assertThat(r.status).as(host).isEqualTo(403);
      assertThat(r.header("x-agentnest-denied")).contains("Host header");
      NetworkEvent e = onlyEvent();
      assertThat(e.rule()).isEqualTo("host-mismatch");
      assertThat(e.decision()).isEqualTo(Decision.DENIED);
    }
    assertThat(origin.connections()).isZero();
  }

  @Test
  void hostHeaderComparisonNormalisesCaseDotsAndTheDefaultPort() {
    // Nothing is allowed: a matching Host header gets past the Host check to the allowlist.
    EgressProxy proxy = proxy(NetworkPolicy.builder());
    for (String host : List.of("web.test", "WEB.TEST:80", "web.test.", "Web.Test.:80")) {
      handle(proxy, "GET http://web.test/ HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
      assertThat(onlyEvent().rule()).as(host).isEqualTo("not-allowlisted");
    }
  }

  @Test
  void plainHttpTargetsAreCheckedLikeConnectTargets() {
    EgressProxy proxy = proxy(allow("loop.test:" + echo.port()));
    Response literal =
        Response.parse(handle(proxy, "GET http://127.0.0.1:" + echo.port() + "/ HTTP/1.1\r\n\r\n"));
    assertThat(literal.status).isEqualTo(403);
    assertThat(onlyEvent().rule()).isEqualTo("ip-literal");
    Response rebinding =
        Response.parse(handle(proxy, "GET http://loop.test:" + echo.port() + "/ HTTP/1.1\r\n\r\n"));
    assertThat(rebinding.status).isEqualTo(403);
    assertThat(onlyEvent().rule()).isEqualTo("non-public-address");
    Response evil = Response.parse(handle(proxy, "GET http://evil-pypi.org/ HTTP/1.1\r\n\r\n"));
    assertThat(evil.status).isEqualTo(403);
    assertThat(onlyEvent().rule()).isEqualTo("not-allowlisted");
    assertThat(echo.accepted()).isZero();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "GET /path HTTP/1.1\r\nHost: web.test\r\n\r\n",
        "GET * HTTP/1.1\r\n\r\n",
        "GET https://web.test/ HTTP/1.1\r\n\r\n",
        "GET ftp://web.test/ HTTP/1.1\r\n\r\n",
        "GET http://allowed.test@web.test/ HTTP/1.1\r\n\r\n",
        "GET http:///x HTTP/1.1\r\n\r\n",
        "GET http://web.test:0/ HTTP/1.1\r\n\r\n",
        "GET http://web.test:99999/ HTTP/1.1\r\n\r\n",
        "GET http://web.test/#frag HTTP/1.1\r\n\r\n",
        "GET http://web.test/ HTTP/2.0\r\n\r\n",
        "GET http://web.test/  HTTP/1.1\r\n\r\n",
        "HELLO\r\n\r\n",
        "G@T http://web.test/ HTTP/1.1\r\n\r\n",
        "GET http://web.test/ HTTP/1.1\r\n folded: header\r\n\r\n",
        "GET http://web.test/ HTTP/1.1\r\nno colon here\r\n\r\n",
        "GET http://web.test/ HTTP/1.1\r\nBad Name: x\r\n\r\n",
        "GET http://web.test/ HTTP/1.1\r\nX: a\u0000b\r\n\r\n",
        "GET http://web.test/ HTTP/1.1\rX: y\r\n\r\n",
        "GET http://web.test/ HTTP/1.1\r\nHost: web.test\r\nHost: web.test\r\n\r\n",
        "POST http://web.test/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST http://web.test/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
        "POST http://web.test/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        "POST http://web.test/ HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
        "GET http://web.test/ HTTP/1.1\r\nX: unterminated",
        "CONNECT web.test HTTP/1.1\r\n\r\n",
        "CONNECT :443 HTTP/1.1\r\n\r\n",
        "CONNECT web.test:443x HTTP/1.1\r\n\r\n",
        "CONNECT [::1 HTTP/1.1\r\n\r\n",
        "CONNECT bad_host!.test:443 HTTP/1.1\r\n\r\n",
        "CONNECT a..b:443 HTTP/1.1\r\n\r\n"
      })
  void malformedOrImproperRequestsAre400WithOneEvent(String request) {
    EgressProxy proxy = proxy(allowLoopback().allow("web.test"));
    Response r = Response.parse(handle(proxy, request));
    assertThat(r.status).isEqualTo(400);
    assertThat(r.header("connection")).isEqualTo("close");
    assertThat(r.body).startsWith("agentnest egress: bad request: ");
    NetworkEvent e = onlyEvent();
    assertThat(e.decision()).isEqualTo(Decision.DENIED);
    assertThat(e.rule()).isEqualTo("bad-request");
  }

  @Test
  void originFormExplainsHowToUseTheProxy() {
    Response r = Response.parse(handle(proxy(allowLoopback()), "GET / HTTP/1.1\r\n\r\n"));
    assertThat(r.status).isEqualTo(400);
    assertThat(r.body).contains("absolute form", "CONNECT", "HTTP_PROXY");
    onlyEvent();
  }

  @Test
  void sizeLimitsOfTheRequestHeadAreEnforced() {
    EgressProxy proxy = proxy(allowLoopback());
    String longLine = "GET http://web.test/" + "a".repeat(9000) + " HTTP/1.1\r\n\r\n";
    assertThat(Response.parse(handle(proxy, longLine)).body).contains("8192");
    onlyEvent();

    StringBuilder many = new StringBuilder("GET http://web.test/ HTTP/1.1\r\n");
    for (int i = 0; i < 101; i++) {
      many.append("X-").append(i).append(": v\r\n");
    }
    assertThat(Response.parse(handle(proxy, many + "\r\n")).body).contains("100 headers");
    onlyEvent();

    StringBuilder huge = new StringBuilder("GET http://web.test/ HTTP/1.1\r\n");
    for (int i = 0; i < 20; i++) {
      huge.append("X-").append(i).append(": ").append("v".repeat(4000)).append("\r\n");
    }
    assertThat(Response.parse(handle(proxy, huge + "\r\n")).body).contains("65536");
    onlyEvent();

    // Exactly at the limits is fine (and then refused for policy reasons, not syntax).
    StringBuilder ok = new StringBuilder("GET http://web.test/ HTTP/1.1\r\n");
    for (int i = 0; i < 100; i++) {
      ok.append("X-").append(i).append(": v\r\n");
    }
    assertThat(Response.parse(handle(proxy, ok + "\r\n")).status).isEqualTo(403);
    onlyEvent();
  }

  @Test
  void emptyConnectionProducesOneDeniedEventAndNoResponse() {
    String response = handle(proxy(allowLoopback()), "");
    assertThat(response).isEmpty();
    NetworkEvent e = onlyEvent();
    assertThat(e.decision()).isEqualTo(Decision.DENIED);
    assertThat(e.method()).isEqualTo("-");
    assertThat(e.reason()).contains("without sending a request");
  }

  @Test
  void aFailingAuditSinkDoesNotBreakTheProxy() {
    EgressProxy proxy =
        new EgressProxy(
            policy(allowLoopback().allow("allowed.test:" + echo.port())),
            resolver,
            e -> {
              throw new IllegalStateException("sink down");
            },
            null,
            SANDBOX);
    String hello = hello("allowed.test");
    assertThat(handle(proxy, connect("allowed.test:" + echo.port()) + hello))
        .endsWith("\r\n\r\n" + hello);
  }

  // ---------------------------------------------------------------------------------------------
  // CONNECT and the TLS server name (SNI)

  @Test
  void aTunnelWhoseSniNamesAnotherHostIsRefusedBeforeAnyByteGoesUpstream() {
    // Both names are allowed: fronting one through the other is refused all the same.
    EgressProxy proxy =
        proxy(
            allowLoopback().allow("allowed.test:" + echo.port()).allow("web.test:" + echo.port()));
    String response = handle(proxy, connect("allowed.test:" + echo.port()) + hello("web.test"));

    assertThat(response)
        .isEqualTo(
            "HTTP/1.1 200 Connection established\r\n\r\n"
                + new String(
                    SniCheck.alert(SniCheck.Refusal.SNI_MISMATCH), StandardCharsets.ISO_8859_1));
    NetworkEvent e = onlyEvent();
    assertThat(e.decision()).isEqualTo(Decision.DENIED);
    assertThat(e.rule()).isEqualTo("sni-mismatch");
    assertThat(e.reason())
        .contains("TLS server name (SNI) web.test differs from the CONNECT host allowed.test");
    assertThat(e.bytesUp()).isZero();
    assertThat(echo.received).hasValue(0);
  }

  @Test
  void aTunnelToANameWithoutSniIsRefused() {
    EgressProxy proxy = proxy(allowLoopback().allow("allowed.test:" + echo.port()));
    handle(proxy, connect("allowed.test:" + echo.port()) + TlsHellosText.noSni());
    NetworkEvent e = onlyEvent();
    assertThat(e.decision()).isEqualTo(Decision.DENIED);
    assertThat(e.rule()).isEqualTo("no-sni");
    assertThat(echo.received).hasValue(0);
  }

  @Test
  void plainBytesThroughATunnelToANameAreRefusedWithA403() {
    EgressProxy proxy = proxy(allowLoopback().allow("allowed.test:" + echo.port()));
    String response =
        handle(
            proxy,
            connect("allowed.test:" + echo.port()) + "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n");
    String afterTunnel = response.substring(response.indexOf("\r\n\r\n") + 4);
    Response r = Response.parse(afterTunnel);
    assertThat(r.status).isEqualTo(403);
    assertThat(r.body).contains("carries TLS only");
    NetworkEvent e = onlyEvent();
    assertThat(e.decision()).isEqualTo(Decision.DENIED);
    assertThat(e.rule()).isEqualTo("not-tls");
    assertThat(echo.received).hasValue(0);
  }

  @Test
  void aRealTlsHandshakeWithTheConnectHostAsSniGoesThrough() throws Exception {
    TlsServer tls = track(new TlsServer());
    LoopbackProxyServer server =
        track(new LoopbackProxyServer(proxy(allowLoopback().allow("allowed.test:" + tls.port()))));
    try (Socket s = client(server.port())) {
      write(s, connect("allowed.test:" + tls.port()));
      assertThat(EgressBenchmark.readHead(s.getInputStream())).startsWith("HTTP/1.1 200 ");
      try (SSLSocket ssl = tls.clientOver(s, "allowed.test")) {
        ssl.startHandshake();
        ssl.getOutputStream().write("ping\n".getBytes(StandardCharsets.US_ASCII));
        ssl.getOutputStream().flush();
        assertThat(
                new BufferedReader(
                        new InputStreamReader(ssl.getInputStream(), StandardCharsets.US_ASCII))
                    .readLine())
            .isEqualTo("pong for allowed.test");
      }
    }
    NetworkEvent e = events.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(e).isNotNull();
    assertThat(e.decision()).isEqualTo(Decision.ALLOWED);
    assertThat(e.bytesUp()).isPositive();
  }

  @Test
  void aRealTlsHandshakeFrontingAnotherNameFailsAndIsAudited() throws Exception {
    TlsServer tls = track(new TlsServer());
    LoopbackProxyServer server =
        track(
            new LoopbackProxyServer(
                proxy(
                    allowLoopback()
                        .allow("allowed.test:" + tls.port())
                        .allow("web.test:" + tls.port()))));
    try (Socket s = client(server.port())) {
      write(s, connect("allowed.test:" + tls.port()));
      assertThat(EgressBenchmark.readHead(s.getInputStream())).startsWith("HTTP/1.1 200 ");
      try (SSLSocket ssl = tls.clientOver(s, "web.test")) {
        // The proxy answers with a fatal unrecognized_name alert; this JDK's client reports it as
        // that, or, in some runs on this machine (not reproducible with its debug log on), as
        // handshake_failure. Either way a fatal alert, not the server, ended the handshake.
        Assertions.assertThatThrownBy(ssl::startHandshake)
            .isInstanceOf(SSLException.class)
            .hasMessageMatching("Received fatal alert: (unrecognized_name|handshake_failure)");
      }
    }
    NetworkEvent e = events.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(e).isNotNull();
    assertThat(e.decision()).isEqualTo(Decision.DENIED);
    assertThat(e.rule()).isEqualTo("sni-mismatch");
    assertThat(e.bytesUp()).isZero();
    assertThat(tls.handshakes).hasValue(0);
  }

  // ---------------------------------------------------------------------------------------------
  // Through real sockets (LoopbackProxyServer)

  @Test
  void halfCloseIsPropagatedBothWays() throws Exception {
    // An address allowed by a range: its tunnel is opaque, so plain bytes may pass.
    LoopbackProxyServer server = track(new LoopbackProxyServer(proxy(allowLoopback())));
    try (Socket s = client(server.port())) {
      write(s, connect("127.0.0.1:" + echo.port()));
      assertThat(EgressBenchmark.readHead(s.getInputStream()))
          .isEqualTo("HTTP/1.1 200 Connection established\r\n\r\n");
      write(s, "first ");
      write(s, "second");
      // Half-close: the echo server closes its side only after seeing our EOF through the tunnel.
      s.shutdownOutput();
      assertThat(new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1))
          .isEqualTo("first second");
    }
    NetworkEvent e = events.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(e).isNotNull();
    assertThat(e.bytesUp()).isEqualTo(12);
    assertThat(e.bytesDown()).isEqualTo(12);
    assertThat(events.poll(300, TimeUnit.MILLISECONDS)).isNull();
  }

  @Test
  void twentyMegabytesPassThroughConnectIntactInBothDirections() throws Exception {
    int size = 20 * 1024 * 1024;
    byte[] data = new byte[size];
    new Random(42).nextBytes(data);
    byte[] expected = MessageDigest.getInstance("SHA-256").digest(data);
    DownloadServer download = track(new DownloadServer(data));
    LoopbackProxyServer server =
        track(
            new LoopbackProxyServer(
                proxy(
                    allowLoopback()
                        .allow("allowed.test:" + download.port())
                        .allow("allowed.test:" + echo.port()))));

    // Download: the server sends 20 MB and closes.
    try (Socket s = client(server.port())) {
      write(s, connect("allowed.test:" + download.port()));
      assertThat(EgressBenchmark.readHead(s.getInputStream())).startsWith("HTTP/1.1 200 ");
      assertThat(digestAll(s.getInputStream())).isEqualTo(expected);
    }
    NetworkEvent down = events.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(down).isNotNull();
    assertThat(down.bytesDown()).isEqualTo(size);
    assertThat(down.bytesUp()).isZero();

    // Upload and echo at the same time: 20 MB each way (to an address: an opaque tunnel).
    ExecutorService writer = Executors.newSingleThreadExecutor();
    try (Socket s = client(server.port())) {
      write(s, connect("127.0.0.1:" + echo.port()));
      assertThat(EgressBenchmark.readHead(s.getInputStream())).startsWith("HTTP/1.1 200 ");
      Future<?> sent =
          writer.submit(
              () -> {
                OutputStream out = s.getOutputStream();
                for (int off = 0; off < size; off += 100_000) {
                  out.write(data, off, Math.min(100_000, size - off));
                }
                s.shutdownOutput();
                return null;
              });
      assertThat(digestAll(s.getInputStream())).isEqualTo(expected);
      sent.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    } finally {
      writer.shutdownNow();
    }
    NetworkEvent both = events.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(both).isNotNull();
    assertThat(both.bytesUp()).isEqualTo(size);
    assertThat(both.bytesDown()).isEqualTo(size);
    assertThat(events.poll(300, TimeUnit.MILLISECONDS)).isNull();
  }

  @Test
  void deniedAnswersArriveOverRealSocketsEvenWithUnreadData() throws Exception {
    LoopbackProxyServer server = track(new LoopbackProxyServer(proxy(allow("allowed.test:1"))));
    try (Socket s = client(server.port())) {
      // A client that sends its TLS hello right after CONNECT, without waiting.
      write(s, connect("evil.test:443") + "x".repeat(30_000));
      Response r =
          Response.parse(
              new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1));
      assertThat(r.status).isEqualTo(403);
      assertThat(r.header("x-agentnest-denied")).isEqualTo("evil.test:443 is not on the allowlist");
    }
    assertThat(events.poll(WAIT.toSeconds(), TimeUnit.SECONDS)).isNotNull();
  }

  @Test
  void plainHttpThroughRealSockets() throws Exception {
    HttpOrigin origin = track(new HttpOrigin());
    LoopbackProxyServer server =
        track(new LoopbackProxyServer(proxy(allowLoopback().allow("web.test:" + origin.port()))));
    try (Socket s = client(server.port())) {
      write(
          s,
          "GET http://web.test:"
              + origin.port()
              + "/ HTTP/1.1\r\nHost: web.test:"
              + origin.port()
              + "\r\n\r\n");
      Response r =
          Response.parse(
              new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1));
      assertThat(r.status).isEqualTo(200);
      assertThat(r.body).isEqualTo("hello from origin");
    }
    NetworkEvent e = events.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
    assertThat(e).isNotNull();
    assertThat(e.decision()).isEqualTo(Decision.ALLOWED);
  }

  @Test
  void closingTheServerEndsOpenTunnels() throws Exception {
    LoopbackProxyServer server =
        new LoopbackProxyServer(proxy(allowLoopback().allow("allowed.test:" + echo.port())));
    try (Socket s = client(server.port())) {
      write(s, connect("allowed.test:" + echo.port()));
      assertThat(EgressBenchmark.readHead(s.getInputStream())).startsWith("HTTP/1.1 200 ");
      long t0 = System.nanoTime();
      server.close();
      try {
        assertThat(s.getInputStream().read()).isEqualTo(-1);
      } catch (IOException reset) {
        // a reset is also an end
      }
      assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(WAIT);
    }
    assertThat(events.poll(WAIT.toSeconds(), TimeUnit.SECONDS)).isNotNull();
  }

  @Test
  void benchmarkRunsAndReportsEveryMeasure() throws Exception {
    Map<String, double[]> results = EgressBenchmark.run(2, 256 * 1024);
    assertThat(results)
        .containsOnlyKeys(
            EgressBenchmark.DOWNLOAD_DIRECT,
            EgressBenchmark.DOWNLOAD_CONNECT,
            EgressBenchmark.GET_DIRECT,
            EgressBenchmark.GET_PROXY,
            EgressBenchmark.GET_CONNECT);
    results
        .values()
        .forEach(
            v -> {
              assertThat(v).hasSize(2);
              assertThat(Arrays.stream(v).min().orElse(0)).isPositive();
            });
    assertThat(Percentiles.nearestRank(new double[] {3, 1, 2, 4}, 50)).isEqualTo(2);
    assertThat(Percentiles.nearestRank(new double[] {3, 1, 2, 4}, 95)).isEqualTo(4);
  }

  // ---------------------------------------------------------------------------------------------
  // Helpers

  private static NetworkPolicy.Builder allow(String... rules) {
    NetworkPolicy.Builder b = NetworkPolicy.builder();
    for (String r : rules) {
      b.allow(r);
    }
    return b;
  }

  private static NetworkPolicy.Builder allowLoopback() {
    return NetworkPolicy.builder().allowAddress("127.0.0.0/8");
  }

  private static NetworkPolicy.Builder ask(NetworkPolicy.Builder b, Duration timeout) {
    return b.onUnknownHost(NetworkPolicy.Mode.ASK).approvalTimeout(timeout);
  }

  private static NetworkPolicy policy(NetworkPolicy.Builder b) {
    return b.build();
  }

  private EgressProxy proxy(NetworkPolicy.Builder policy) {
    return proxy(policy, null);
  }

  private EgressProxy proxy(NetworkPolicy.Builder policy, ApprovalHandler handler) {
    Consumer<NetworkEvent> sink = events::add;
    return new EgressProxy(policy.build(), resolver, sink, handler, SANDBOX);
  }

  private static String connect(String target) {
    return "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n";
  }

  /** A real TLS ClientHello (JDK) naming {@code sni}, as text in the tests' ISO-8859-1 form. */
  private static String hello(String sni) {
    return new String(TlsHellos.clientHello(sni), StandardCharsets.ISO_8859_1);
  }

  /** Runs one connection synchronously on in-memory streams; returns what the client got. */
  private static String handle(EgressProxy proxy, String request) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    proxy.handle(new ByteArrayInputStream(request.getBytes(StandardCharsets.ISO_8859_1)), out);
    return out.toString(StandardCharsets.ISO_8859_1);
  }

  private NetworkEvent onlyEvent() {
    assertThat(events).hasSize(1);
    return events.poll();
  }

  private static InetAddress loopback() throws IOException {
    return InetAddress.getByAddress(new byte[] {127, 0, 0, 1});
  }

  private static Socket client(int port) throws IOException {
    Socket s = new Socket();
    s.setSoTimeout((int) WAIT.toMillis());
    s.connect(new InetSocketAddress(loopback(), port), (int) WAIT.toMillis());
    return s;
  }

  private static void write(Socket s, String text) throws IOException {
    s.getOutputStream().write(text.getBytes(StandardCharsets.ISO_8859_1));
    s.getOutputStream().flush();
  }

  private static byte[] digestAll(InputStream in) throws Exception {
    MessageDigest md = MessageDigest.getInstance("SHA-256");
    byte[] buf = new byte[64 * 1024];
    int n;
    while ((n = in.read(buf)) >= 0) {
      md.update(buf, 0, n);
    }
    return md.digest();
  }

  /** A parsed HTTP response (test side, lenient). */
  private static final class Response {
    final int status;
    final Map<String, String> headers = new LinkedHashMap<>();
    final String body;

    private Response(String raw) {
      int end = raw.indexOf("\r\n\r\n");
      assertThat(end).as("response head in: %s", raw).isPositive();
      String[] lines = raw.substring(0, end).split("\r\n");
      status = Integer.parseInt(lines[0].split(" ")[1]);
      for (int i = 1; i < lines.length; i++) {
        int colon = lines[i].indexOf(':');
        headers.put(
            lines[i].substring(0, colon).toLowerCase(Locale.ROOT),
            lines[i].substring(colon + 1).trim());
      }
      body = raw.substring(end + 4);
    }

    static Response parse(String raw) {
      return new Response(raw);
    }

    String header(String lowerName) {
      return headers.get(lowerName);
    }
  }

  /** Accepts connections on 127.0.0.1 and runs a handler for each on a small bounded pool. */
  private abstract static class LoopbackServer implements AutoCloseable {
    private final ServerSocket server;
    private final ExecutorService pool = Executors.newFixedThreadPool(8);
    private final AtomicInteger accepted = new AtomicInteger();
    private final Thread acceptor;

    LoopbackServer() throws IOException {
      server = new ServerSocket(0, 50, loopback());
      acceptor =
          new Thread(
              () -> {
                while (!server.isClosed()) {
                  try {
                    Socket s = server.accept();
                    accepted.incrementAndGet();
                    pool.execute(
                        () -> {
                          try (s) {
                            s.setSoTimeout((int) WAIT.toMillis());
                            serve(s);
                          } catch (IOException e) {
                            // test client went away
                          }
                        });
                  } catch (IOException e) {
                    return;
                  }
                }
              },
              "test-server");
      acceptor.setDaemon(true);
      acceptor.start();
    }

    abstract void serve(Socket s) throws IOException;

    int port() {
      return server.getLocalPort();
    }

    int accepted() {
      return accepted.get();
    }

    @Override
    public void close() throws Exception {
      server.close();
      pool.shutdownNow();
      pool.awaitTermination(5, TimeUnit.SECONDS);
      acceptor.join(5_000);
    }
  }

  /** A ClientHello without SNI, as text. */
  private static final class TlsHellosText {
    static String noSni() {
      return new String(TlsHellos.clientHello(null), StandardCharsets.ISO_8859_1);
    }
  }

  /**
   * A TLS server on 127.0.0.1 with a fresh self-signed certificate for allowed.test (made by the
   * JDK's keytool): answers "pong for NAME" to a line, NAME being the SNI it received.
   */
  private static final class TlsServer extends LoopbackServer {
    private static final char[] PASS = "changeit".toCharArray();
    private static @Nullable SSLContext serverCtx;
    private static @Nullable SSLContext clientCtx;
    final AtomicInteger handshakes = new AtomicInteger();

    TlsServer() throws Exception {
      contexts();
    }

    private static synchronized void contexts() throws Exception {
      if (serverCtx != null) {
        return;
      }
      Path dir = Files.createTempDirectory("agentnest-tls-");
      Path store = dir.resolve("server.p12");
      String keytool = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
      Process p =
          new ProcessBuilder(
                  keytool,
                  "-genkeypair",
                  "-alias",
                  "tls",
                  "-keyalg",
                  "EC",
                  "-groupname",
                  "secp256r1",
                  "-dname",
                  "CN=allowed.test",
                  "-ext",
                  "SAN=dns:allowed.test",
                  "-validity",
                  "2",
                  "-storetype",
                  "PKCS12",
                  "-keystore",
                  store.toString(),
                  "-storepass",
                  "changeit",
                  "-keypass",
                  "changeit",
                  "-noprompt")
              .redirectErrorStream(true)
              .start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).as(out).isZero();
      KeyStore ks = KeyStore.getInstance("PKCS12");
      try (InputStream in = Files.newInputStream(store)) {
        ks.load(in, PASS);
      }
      Files.delete(store);
      Files.delete(dir);
      KeyManagerFactory kmf =
          KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(ks, PASS);
      SSLContext server = SSLContext.getInstance("TLS");
      server.init(kmf.getKeyManagers(), null, null);
      KeyStore trust = KeyStore.getInstance("PKCS12");
      trust.load(null, null);
      trust.setCertificateEntry("server", ks.getCertificate("tls"));
      TrustManagerFactory tmf =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(trust);
      SSLContext client = SSLContext.getInstance("TLS");
      client.init(null, tmf.getTrustManagers(), null);
      serverCtx = server;
      clientCtx = client;
    }

    /** A TLS client over {@code tunnel} that asks for {@code sni}. */
    SSLSocket clientOver(Socket tunnel, String sni) throws IOException {
      SSLSocket ssl =
          (SSLSocket)
              Objects.requireNonNull(clientCtx)
                  .getSocketFactory()
                  .createSocket(tunnel, sni, tunnel.getPort(), true);
      SSLParameters params = ssl.getSSLParameters();
      params.setServerNames(List.of(new SNIHostName(sni)));
      ssl.setSSLParameters(params);
      return ssl;
    }

    @Override
    void serve(Socket s) throws IOException {
      SSLSocket ssl =
          (SSLSocket)
              Objects.requireNonNull(serverCtx).getSocketFactory().createSocket(s, null, true);
      ssl.setUseClientMode(false);
      ssl.startHandshake();
      handshakes.incrementAndGet();
      String sni =
          ((ExtendedSSLSession) ssl.getSession())
              .getRequestedServerNames().stream()
                  .map(n -> ((SNIHostName) n).getAsciiName())
                  .findFirst()
                  .orElse("-");
      BufferedReader r =
          new BufferedReader(
              new InputStreamReader(ssl.getInputStream(), StandardCharsets.US_ASCII));
      if (r.readLine() != null) {
        ssl.getOutputStream().write(("pong for " + sni + "\n").getBytes(StandardCharsets.US_ASCII));
        ssl.getOutputStream().flush();
      }
      ssl.close();
    }
  }

  /** Echoes everything; after the client's EOF, closes its side too. */
  private static final class EchoServer extends LoopbackServer {
    final AtomicLong received = new AtomicLong();

    EchoServer() throws IOException {}

    @Override
    void serve(Socket s) throws IOException {
      InputStream in = s.getInputStream();
      OutputStream out = s.getOutputStream();
      byte[] buf = new byte[64 * 1024];
      int n;
      while ((n = in.read(buf)) >= 0) {
        received.addAndGet(n);
        out.write(buf, 0, n);
      }
      s.shutdownOutput();
    }
  }

  /** Sends a fixed body as soon as a client connects, then closes its side. */
  private static final class DownloadServer extends LoopbackServer {
    private final byte[] data;

    DownloadServer(byte[] data) throws IOException {
      this.data = data;
    }

    @Override
    void serve(Socket s) throws IOException {
      OutputStream out = s.getOutputStream();
      for (int off = 0; off < data.length; off += 65_536) {
        out.write(data, off, Math.min(65_536, data.length - off));
      }
      s.shutdownOutput();
      s.getInputStream().readAllBytes(); // wait for the client to close
    }
  }

  private static final class Recorded {
    final String requestLine;
    final Map<String, String> headers;
    final String body;
    final long rawBytes;

    Recorded(String requestLine, Map<String, String> headers, String body, long rawBytes) {
      this.requestLine = requestLine;
      this.headers = headers;
      this.body = body;
      this.rawBytes = rawBytes;
    }
  }

  /** A tiny HTTP/1.1 origin that records each request and answers by path. */
  private static final class HttpOrigin extends LoopbackServer {
    static final int BIG = 3 * 1024 * 1024 + 17;
    private final BlockingQueue<Recorded> requests = new LinkedBlockingQueue<>();
    private final List<Long> responseBytes = new CopyOnWriteArrayList<>();

    HttpOrigin() throws IOException {}

    int connections() {
      return accepted();
    }

    Recorded take() throws InterruptedException {
      Recorded r = requests.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
      assertThat(r).as("a request reached the origin").isNotNull();
      return r;
    }

    long lastResponseBytes() {
      return responseBytes.get(responseBytes.size() - 1);
    }

    @Override
    void serve(Socket s) throws IOException {
      InputStream in = s.getInputStream();
      String head = EgressBenchmark.readHead(in);
      long raw = head.length();
      String[] lines = head.substring(0, head.length() - 4).split("\r\n");
      Map<String, String> headers = new LinkedHashMap<>();
      for (int i = 1; i < lines.length; i++) {
        int colon = lines[i].indexOf(':');
        headers.put(
            lines[i].substring(0, colon).toLowerCase(Locale.ROOT),
            lines[i].substring(colon + 1).trim());
      }
      ByteArrayOutputStream body = new ByteArrayOutputStream();
      if (headers.containsKey("content-length")) {
        byte[] b = in.readNBytes(Integer.parseInt(headers.get("content-length")));
        body.write(b);
        raw += b.length;
      } else if ("chunked".equals(headers.get("transfer-encoding"))) {
        while (true) {
          String sizeLine = line(in);
          raw += sizeLine.length() + 2;
          int size = Integer.parseInt(sizeLine.split(";")[0], 16);
          if (size == 0) {
            raw += line(in).length() + 2;
            break;
          }
          body.write(in.readNBytes(size));
          raw += size + line(in).length() + 2;
        }
      }
      requests.add(
          new Recorded(lines[0], headers, body.toString(StandardCharsets.ISO_8859_1), raw));
      String path = lines[0].split(" ")[1];
      byte[] response;
      if (path.equals("/continue")) {
        response =
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone"
                .getBytes(StandardCharsets.ISO_8859_1);
      } else if (path.equals("/chunked")) {
        response =
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
                .getBytes(StandardCharsets.ISO_8859_1);
      } else if (path.equals("/big")) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.write(
            ("HTTP/1.1 200 OK\r\nContent-Length: " + BIG + "\r\n\r\n")
                .getBytes(StandardCharsets.ISO_8859_1));
        byte[] payload = new byte[BIG];
        Arrays.fill(payload, (byte) 'z');
        b.write(payload);
        response = b.toByteArray();
      } else {
        response =
            ("HTTP/1.1 200 OK\r\nContent-Length: 17\r\nX-Origin: yes\r\nConnection: keep-alive\r\n"
                    + "Keep-Alive: timeout=5\r\n\r\nhello from origin")
                .getBytes(StandardCharsets.ISO_8859_1);
      }
      responseBytes.add((long) response.length);
      s.getOutputStream().write(response);
      s.getOutputStream().flush();
      // Keep the connection open as a keep-alive server would: the proxy must stop by framing.
      s.getInputStream().read();
    }

    private static String line(InputStream in) throws IOException {
      StringBuilder sb = new StringBuilder();
      int b;
      while ((b = in.read()) >= 0 && b != '\n') {
        if (b != '\r') {
          sb.append((char) b);
        }
      }
      return sb.toString();
    }
  }
}
