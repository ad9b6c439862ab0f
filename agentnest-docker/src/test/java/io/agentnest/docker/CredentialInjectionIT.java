package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Header;
import io.agentnest.NetworkPolicy;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import io.agentnest.internal.egress.EgressResolvers;
import io.agentnest.internal.egress.LoopbackHttpsOrigin;
import io.agentnest.internal.egress.StaticResolver;
import io.agentnest.internal.egress.UpstreamTrust;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Credential injection from real code in a real sandbox (Python's urllib and http.client in the
 * base image), through the host proxy, to HTTPS servers on the host's loopback that have a test CA
 * of their own. The token is given to the proxy only: the sandbox must never see it.
 */
@ExtendWith(DockerEngineRequired.class)
class CredentialInjectionIT {
  static final String TOKEN = "ghp_IT0nlyTheProxyHoldsThis0123456789abcd";
  static final String API_KEY = "sk-it-placeholder-backed-0123456789abcdef";

  static LoopbackHttpsOrigin api;
  static LoopbackHttpsOrigin other;
  static LoopbackHttpsOrigin badName;
  static AuditLog audit;
  @TempDir static Path auditDir;
  static Sandbox sandbox;
  static final List<String> outputs = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    api = new LoopbackHttpsOrigin("api.test", "api.test", TOKEN);
    other = new LoopbackHttpsOrigin("other.test", "other.test", null);
    badName = new LoopbackHttpsOrigin("bad.test", "somebody-else.test", null);
    EgressResolvers.replaceForTests(
        StaticResolver.of("api.test", "127.0.0.1")
            .with("other.test", "127.0.0.1")
            .with("bad.test", "127.0.0.1"));
    UpstreamTrust.replaceForTests(
        LoopbackHttpsOrigin.trusting(
            api.caCertificate(), other.caCertificate(), badName.caCertificate()));
    audit = AuditLog.open(auditDir.resolve("audit"));
    sandbox =
        Sandbox.create(
            SandboxConfig.builder()
                .auditLog(audit)
                .network(
                    NetworkPolicy.allow(
                            "api.test:" + api.port(),
                            "other.test:" + other.port(),
                            "bad.test:" + badName.port())
                        .allowAddress("127.0.0.1")
                        .inject("api.test", Header.bearer(Secret.named("GITHUB_TOKEN", TOKEN)))
                        .placeholder("api.test", "API_KEY", Secret.of(API_KEY))
                        .inject("other.test", Header.of("X-Other", "", Secret.of(TOKEN + "x"), ""))
                        .inject("bad.test", Header.bearer(Secret.of(TOKEN + "y")))
                        .build())
                .build());
  }

  @AfterAll
  static void stop() throws Exception {
    EgressResolvers.replaceForTests(null);
    UpstreamTrust.replaceForTests(null);
    if (sandbox != null) {
      sandbox.close();
    }
    for (LoopbackHttpsOrigin o : new LoopbackHttpsOrigin[] {api, other, badName}) {
      if (o != null) {
        o.close();
      }
    }
    if (audit != null) {
      audit.close();
    }
    // Every output any test saw: the token never appears, masked or not.
    assertThat(outputs).noneMatch(o -> o.contains(TOKEN) || o.contains(API_KEY));
  }

  static String run(String code) {
    ExecResult r =
        sandbox.runCode(code, ExecOptions.builder().timeout(Duration.ofSeconds(90)).build());
    String all = r.stdout() + "\n" + r.stderr() + "\n" + r.result() + "\n" + r.error();
    outputs.add(all);
    return all;
  }

  static String get(String url, String headers) {
    return run(
        "import urllib.request, urllib.error\n"
            + "req = urllib.request.Request('"
            + url
            + "', headers={"
            + headers
            + "})\n"
            + "try:\n"
            + "    r = urllib.request.urlopen(req, timeout=30)\n"
            + "    out = '%d %s' % (r.status, r.read()[:2000].decode())\n"
            + "except urllib.error.HTTPError as e:\n"
            + "    out = '%d %s' % (e.code, e.read().decode()[:500])\n"
            + "except Exception as e:\n"
            + "    out = 'ERR %s' % e\n"
            + "out");
  }

  List<AuditEvent> audited(String type) {
    return audit.query(AuditQuery.builder().sandbox(sandbox.id()).type(type).build());
  }

  @Test
  void urllibWithoutATokenGetsAnAuthenticatedAnswerAndTheUseIsAuditedByName() throws Exception {
    String out = get("https://api.test:" + api.port() + "/whoami", "");

    assertThat(out).contains("200 hello, authenticated caller");
    // The use is recorded as the response ends: wait for the record, not for a time.
    Awaitility.await()
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () ->
                assertThat(audited("network.credential_used"))
                    .anySatisfy(
                        e -> {
                          assertThat(e.data())
                              .containsEntry("secret", "GITHUB_TOKEN")
                              .containsEntry("host", "api.test")
                              .containsEntry("method", "GET")
                              .containsEntry("path", "/whoami")
                              .containsEntry("status", 200);
                          assertThat(e.data().toString()).doesNotContain(TOKEN);
                        }));
  }

  @Test
  void aServerEchoingTheTokenShowsTheSandboxOnlyAMask() {
    String out = get("https://api.test:" + api.port() + "/echo", "");

    assertThat(out).contains("Bearer ****").doesNotContain(TOKEN);
  }

  @Test
  void thePlaceholderInTheSandboxIsSwappedForItsOwnHost() throws Exception {
    String out =
        get(
            "https://api.test:" + api.port() + "/echo",
            "'X-Api-Key': __import__('os').environ['API_KEY']");

    assertThat(out).contains("'200 ");
    assertThat(api.nextRequestHeadersMatching("X-Api-Key", Duration.ofSeconds(10)))
        .containsExactly(API_KEY);
    assertThat(run("import os; os.environ['API_KEY']")).contains("agentnest-placeholder-");
  }

  @Test
  void thePlaceholderSentToAnotherHostIsNotSwappedAndIsAuditedAsALeak() throws Exception {
    get(
        "https://other.test:" + other.port() + "/echo",
        "'X-Api-Key': __import__('os').environ['API_KEY']");

    assertThat(other.nextRequestHeadersMatching("X-Api-Key", Duration.ofSeconds(10)))
        .singleElement()
        .asString()
        .startsWith("agentnest-placeholder-");
    Awaitility.await()
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () ->
                assertThat(audited("network.placeholder_leak"))
                    .anySatisfy(
                        e ->
                            assertThat(e.data())
                                .containsEntry("secret", "API_KEY")
                                .containsEntry("owner_host", "api.test")
                                .containsEntry("host", "other.test")));
  }

  @Test
  void anUpstreamWithACertificateForAnotherNameIsRefused() {
    String out = get("https://bad.test:" + badName.port() + "/whoami", "");

    assertThat(out).contains("'502 agentnest egress: cannot verify bad.test");
  }

  @Test
  void keepAliveAndChunkedBodiesWorkOverOneConnection() {
    String out =
        run(
            "import http.client, ssl\n"
                + "c = http.client.HTTPSConnection('127.0.0.1', 3128,"
                + " context=ssl.create_default_context(), timeout=60)\n"
                + "c.set_tunnel('api.test', "
                + api.port()
                + ")\n"
                + "res = []\n"
                + "for i in range(5):\n"
                + "    c.request('GET', '/whoami')\n"
                + "    r = c.getresponse(); r.read(); res.append(r.status)\n"
                + "c.request('GET', '/chunked?n=4000000')\n"
                + "r = c.getresponse(); body = r.read()\n"
                + "res.append((r.getheader('Transfer-Encoding'), len(body)))\n"
                + "def gen():\n"
                + "    for i in range(30):\n"
                + "        yield b'y' * 50000\n"
                + "c.request('POST', '/upload', body=gen(), encode_chunked=True)\n"
                + "r = c.getresponse(); res.append(r.read().decode().strip())\n"
                + "str(res)");

    assertThat(out)
        .contains("[200, 200, 200, 200, 200, ('chunked', 4000000), 'read 1500000 bytes']");
  }

  @Test
  void aClientThatPinsOtherCertificatesFailsClearly() {
    String out =
        run(
            "import urllib.request, ssl\n"
                + "ctx = ssl.create_default_context(cafile='/etc/ssl/certs/ca-certificates.crt')\n"
                + "try:\n"
                + "    urllib.request.urlopen('https://api.test:"
                + api.port()
                + "/whoami', context=ctx, timeout=30)\n"
                + "    out = 'CONNECTED'\n"
                + "except Exception as e:\n"
                + "    out = 'ERR %s' % e\n"
                + "out");

    assertThat(out).contains("ERR").contains("CERTIFICATE_VERIFY_FAILED");
  }

  @Test
  void aTlsNameOtherThanTheConnectHostIsRefused() {
    String out =
        run(
            "import socket, ssl\n"
                + "s = socket.create_connection(('127.0.0.1', 3128), timeout=30)\n"
                + "s.sendall(b'CONNECT api.test:"
                + api.port()
                + " HTTP/1.1\\r\\nHost: api.test\\r\\n\\r\\n')\n"
                + "head = b''\n"
                + "while b'\\r\\n\\r\\n' not in head and len(head) < 4096:\n"
                + "    chunk = s.recv(1)\n"
                + "    if not chunk: break\n"
                + "    head += chunk\n"
                + "try:\n"
                + "    t = ssl.create_default_context().wrap_socket(s, server_hostname='other.test')\n"
                + "    out = 'HANDSHAKE ' + t.version()\n"
                + "except Exception as e:\n"
                + "    out = 'REFUSED %s' % e\n"
                + "out");

    assertThat(out).contains("REFUSED");
  }

  @Test
  void theTokenIsNowhereInTheSandboxEnvironmentFilesOrProcesses() {
    get("https://api.test:" + api.port() + "/whoami", "");
    String out =
        run(
            "import os\n"
                // Written reversed: the scanning code itself must not contain what it looks for.
                + "needles = [b'"
                + new StringBuilder(TOKEN).reverse()
                + "'[::-1], b'"
                + new StringBuilder(API_KEY).reverse()
                + "'[::-1]]\n"
                + "hits = []\n"
                + "for k, v in os.environ.items():\n"
                + "    if any(n.decode() in v for n in needles): hits.append('env ' + k)\n"
                + "for pid in os.listdir('/proc'):\n"
                + "    if not pid.isdigit(): continue\n"
                + "    for f in ('environ', 'cmdline'):\n"
                + "        try:\n"
                + "            data = open('/proc/%s/%s' % (pid, f), 'rb').read()\n"
                + "        except OSError:\n"
                + "            continue\n"
                + "        if any(n in data for n in needles): hits.append('proc %s %s' % (pid, f))\n"
                + "scanned = 0\n"
                + "for root in ('/tmp', '/workspace', '/etc', '/home', '/root', '/var', '/run'):\n"
                + "    for d, dirs, files in os.walk(root):\n"
                + "        for f in files:\n"
                + "            p = os.path.join(d, f)\n"
                + "            try:\n"
                + "                if os.path.islink(p) or os.path.getsize(p) > 50_000_000: continue\n"
                + "                data = open(p, 'rb').read()\n"
                + "            except OSError:\n"
                + "                continue\n"
                + "            scanned += 1\n"
                + "            if any(n in data for n in needles): hits.append('file ' + p)\n"
                + "'scanned %d hits %s bundle %s' % (scanned, hits,"
                + " os.path.exists(os.environ['SSL_CERT_FILE']))");

    assertThat(out).contains("hits []").contains("bundle True").doesNotContain("scanned 0 ");
  }

  /**
   * Issue 42 (3), from real code: the host reflects the request split into 16-byte chunks or gzip'd
   * (whatever the client accepts). The body is printed reversed, a form the output redaction does
   * not know, so only the proxy's masking stands between the token and this output; not even a
   * 5-character prefix of it may come out.
   */
  @Test
  void aReflectingHostSplittingOrCompressingTheEchoHandsTheSandboxNoPieceOfTheToken() {
    for (String path : List.of("/echo-chunked16", "/echo-gzip")) {
      String out =
          run(
              "import urllib.request, gzip\n"
                  + "req = urllib.request.Request('https://api.test:"
                  + api.port()
                  + path
                  + "', headers={'Accept-Encoding': 'gzip'})\n"
                  + "body = urllib.request.urlopen(req, timeout=30).read()\n"
                  + "try:\n"
                  + "    body = gzip.decompress(body)\n"
                  + "except OSError:\n"
                  + "    pass\n"
                  + "print(body.decode('latin-1')[::-1])");
      String seen = new StringBuilder(out).reverse().toString();

      assertThat(seen).as(path).contains("Bearer ****");
      for (int k = 5; k <= TOKEN.length(); k++) {
        assertThat(seen).as(path).doesNotContain(TOKEN.substring(0, k));
      }
    }
  }

  /**
   * Issue 42 (10), from real code: an upload still open when the sandbox is destroyed (as {@code
   * agentnest run} does when its command ends) is closed and audited with the bytes it moved,
   * before the sandbox's last record.
   */
  @Test
  void anUploadStillOpenWhenTheSandboxIsDestroyedIsAuditedWithItsBytes() {
    Sandbox sb =
        Sandbox.create(
            SandboxConfig.builder()
                .auditLog(audit)
                .network(
                    NetworkPolicy.allow("api.test:" + api.port())
                        .allowAddress("127.0.0.1")
                        .inject("api.test", Header.bearer(Secret.named("GITHUB_TOKEN", TOKEN)))
                        .build())
                .build());
    try {
      ExecResult r =
          sb.runCode(
              "import http.client, ssl, threading, time\n"
                  + "sent = threading.Event()\n"
                  + "def upload():\n"
                  + "    c = http.client.HTTPSConnection('127.0.0.1', 3128,"
                  + " context=ssl.create_default_context(), timeout=600)\n"
                  + "    c.set_tunnel('api.test', "
                  + api.port()
                  + ")\n"
                  + "    c.putrequest('POST', '/upload')\n"
                  + "    c.putheader('Content-Length', str(10 * 1024 * 1024))\n"
                  + "    c.endheaders()\n"
                  + "    c.send(b'x' * (200 * 1024))\n"
                  + "    sent.set()\n"
                  + "    time.sleep(600)\n"
                  + "threading.Thread(target=upload, daemon=True).start()\n"
                  + "sent.wait(60)\n"
                  + "time.sleep(3)\n" // the proxy relays what the socket took
                  + "sent.is_set()",
              ExecOptions.builder().timeout(Duration.ofSeconds(90)).build());
      assertThat(r.result()).as(r.toString()).isEqualTo("True");
    } finally {
      sb.destroy();
    }

    List<AuditEvent> records =
        audit.query(AuditQuery.builder().sandbox(sb.id()).oldestFirst().limit(1000).build());
    int attempt = -1;
    int destroyed = -1;
    for (int i = 0; i < records.size(); i++) {
      AuditEvent e = records.get(i);
      if (e.type().equals("network.attempt")
          && String.valueOf(e.data().get("reason")).contains("closed while open")) {
        attempt = i;
        assertThat(((Number) e.data().get("bytes_up")).longValue()).isGreaterThan(200 * 1024);
      }
      if (e.type().equals("sandbox.destroyed")) {
        destroyed = i;
      }
    }
    assertThat(attempt).as("the open upload's record in %s", records).isNotNegative();
    assertThat(destroyed).isGreaterThan(attempt);
  }

  /**
   * Issue 42 (9), from real code: 50 requests over one keep-alive connection cost two {@code
   * network.credential_used} records, the second carrying the count, not fifty.
   */
  @Test
  void manyRequestsOverOneConnectionAreTwoCredentialRecordsWithTheCount() {
    String out =
        run(
            "import http.client, ssl\n"
                + "c = http.client.HTTPSConnection('127.0.0.1', 3128,"
                + " context=ssl.create_default_context(), timeout=60)\n"
                + "c.set_tunnel('api.test', "
                + api.port()
                + ")\n"
                + "ok = 0\n"
                + "for i in range(50):\n"
                + "    c.request('GET', '/whoami?fold')\n"
                + "    r = c.getresponse(); r.read(); ok += r.status == 200\n"
                + "c.close()\n"
                + "ok");
    assertThat(out).contains("50");

    Awaitility.await()
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () -> {
              List<AuditEvent> folded =
                  audited("network.credential_used").stream()
                      .filter(e -> String.valueOf(e.data().get("path")).equals("/whoami?fold"))
                      .toList();
              assertThat(folded).hasSize(2);
              assertThat(folded)
                  .anySatisfy(
                      e -> {
                        assertThat(((Number) e.data().get("repeated")).longValue()).isEqualTo(49);
                        assertThat(e.data().get("statuses").toString()).contains("200=49");
                      });
            });
  }
}
