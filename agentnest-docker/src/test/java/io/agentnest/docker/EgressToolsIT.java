package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.AgentNestException;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.audit.AuditEvent;
import io.agentnest.audit.AuditLog;
import io.agentnest.audit.AuditQuery;
import io.agentnest.config.AgentNestConfig;
import io.agentnest.internal.egress.EgressResolvers;
import io.agentnest.internal.egress.JavaTrustStore;
import io.agentnest.internal.egress.LoopbackHttpsOrigin;
import io.agentnest.internal.egress.StaticResolver;
import io.agentnest.internal.egress.UpstreamTrust;
import io.agentnest.internal.lifecycle.SecurityPolicy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * curl, Python's requests, git and a Java program, from Debian packages in an image built for this
 * test, reach an HTTPS server on the host's loopback through the intercepting proxy: the server
 * sees the injected token, the sandbox never holds it. The image is built once ({@link
 * BaseImageBuilder}) and kept.
 */
@ExtendWith(DockerEngineRequired.class)
class EgressToolsIT {
  // The tag names the package list: change it with PACKAGES, or a kept older image is reused.
  static final String IMAGE = "agentnest-test/egress-tools:jre";
  static final List<String> PACKAGES =
      List.of("curl", "python3-requests", "git", "openjdk-17-jre-headless");
  static final String TOKEN = "ghp_ToolsITOnlyTheProxyHoldsThis0123456789";
  static final String KEY = "sk-ToolsITPlaceholderSwappedByTheProxy0123";

  static LoopbackHttpsOrigin api;
  // A placeholder host (intercepted), a host without rules whose CA the test hook makes one of
  // the host's default CAs (an opaque tunnel the sandbox verifies), and one whose CA nobody trusts.
  static LoopbackHttpsOrigin keys;
  static LoopbackHttpsOrigin other;
  static LoopbackHttpsOrigin rogue;
  @TempDir static Path classes;
  static AuditLog audit;
  @TempDir static Path auditDir;
  static Sandbox sandbox;
  static final List<String> outputs = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    ensureImage();
    api = new LoopbackHttpsOrigin("api.test", "api.test", TOKEN);
    keys = new LoopbackHttpsOrigin("keys.test", "keys.test", KEY);
    other = new LoopbackHttpsOrigin("other.test", "other.test", null);
    rogue = new LoopbackHttpsOrigin("rogue.test", "rogue.test", null);
    EgressResolvers.replaceForTests(
        StaticResolver.of("api.test", "127.0.0.1")
            .with("keys.test", "127.0.0.1")
            .with("other.test", "127.0.0.1")
            .with("rogue.test", "127.0.0.1"));
    UpstreamTrust.replaceForTests(
        LoopbackHttpsOrigin.trusting(api.caCertificate(), keys.caCertificate()));
    JavaTrustStore.addDefaultsForTests(List.of(other.caCertificate()));
    audit = AuditLog.open(auditDir.resolve("audit"));
    // Configured as a user would: agentnest.yaml, the token in the host's environment.
    String yaml =
        """
        version: 1
        defaults:
          image: %s
          env: {JAVA_TOOL_OPTIONS: "-Dagentnest.it=kept"}
          network:
            allow: ["api.test:%d", "keys.test:%d", "other.test:%d", "rogue.test:%d"]
            allow_addresses: [127.0.0.1]
            credentials:
              - host: api.test
                header: "Authorization: Bearer ${secret:GITHUB_TOKEN}"
                rules:
                  - {methods: [GET, HEAD], path: /whoami}
                  - {methods: [GET], path: /echo}
                  - {methods: [GET], path: /acme/}
              - host: keys.test
                placeholder: KEYS_API_KEY
        """
            .formatted(IMAGE, api.port(), keys.port(), other.port(), rogue.port());
    SandboxConfig config =
        AgentNestConfig.parse(
                yaml, "agentnest.yaml", Map.of("GITHUB_TOKEN", TOKEN, "KEYS_API_KEY", KEY))
            .sandboxConfig();
    sandbox = Sandbox.create(config.toBuilder().auditLog(audit).build());
    sandbox.files().write("Get.class", JavaGet.compile(classes));
  }

  /** Builds the tools image unless an earlier run did; a missing mmdebstrap fails under CI. */
  static void ensureImage() {
    if (BaseImageBuilder.exists(IMAGE)) {
      return;
    }
    if (BaseImageBuilder.findOnPath("mmdebstrap") == null) {
      DockerEngineRequired.missing("mmdebstrap", "it builds " + IMAGE + " from Debian packages");
    }
    synchronized (EgressToolsIT.class) {
      if (!BaseImageBuilder.exists(IMAGE)) {
        System.err.println("building " + IMAGE + " with " + PACKAGES + " for the tests...");
        try {
          BaseImageBuilder.build(IMAGE, PACKAGES, "bookworm", n -> {});
        } catch (AgentNestException e) {
          DockerEngineRequired.missing("the tools image", String.valueOf(e.getMessage()));
        }
      }
    }
  }

  @AfterAll
  static void stop() {
    EgressResolvers.replaceForTests(null);
    UpstreamTrust.replaceForTests(null);
    JavaTrustStore.addDefaultsForTests(List.of());
    if (sandbox != null) {
      sandbox.close();
    }
    for (LoopbackHttpsOrigin o : new LoopbackHttpsOrigin[] {api, keys, other, rogue}) {
      if (o != null) {
        o.close();
      }
    }
    if (audit != null) {
      audit.close();
    }
    assertThat(outputs).noneMatch(o -> o.contains(TOKEN) || o.contains(KEY));
  }

  static String sh(String command) {
    ExecResult r =
        sandbox.exec(command, ExecOptions.builder().timeout(Duration.ofSeconds(90)).build());
    String all = "exit " + r.exitCode() + "\n" + r.stdout() + "\n" + r.stderr();
    outputs.add(all);
    return all;
  }

  String url(String path) {
    return "https://api.test:" + api.port() + path;
  }

  /** Runs the compiled {@link JavaGet} program in the sandbox's JRE through the agent's proxy. */
  static String java(String mode, String url, String... headers) {
    return javaWith("", mode, url, headers);
  }

  static String javaWith(String envPrefix, String mode, String url, String... headers) {
    StringBuilder cmd =
        new StringBuilder(
            "cd /workspace && "
                + envPrefix
                + "java -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort="
                + SecurityPolicy.EGRESS_PORT
                + " -cp . Get "
                + mode
                + " "
                + url);
    for (String h : headers) {
      cmd.append(" \"").append(h).append('"');
    }
    return sh(cmd.toString());
  }

  @Test
  void javaGetsAnAuthenticatedAnswerWithAPlaceholderAndTheServerSeesTheSecret() throws Exception {
    String out =
        java(
            "url",
            "https://keys.test:" + keys.port() + "/whoami",
            "Authorization: Bearer $KEYS_API_KEY");

    assertThat(out)
        .contains("exit 0")
        .contains("status 200")
        .contains("hello, authenticated caller");
    assertThat(keys.nextRequestHeadersMatching("Authorization", Duration.ofSeconds(10)))
        .containsExactly("Bearer " + KEY);
    // Every JVM says it read the variable; the user's own option survived ours being appended.
    assertThat(out)
        .contains("Picked up JAVA_TOOL_OPTIONS: -Dagentnest.it=kept " + JavaTrustStore.OPTIONS)
        .contains("property agentnest.it=kept");
    assertThat(sh("echo \"$KEYS_API_KEY\"; stat -c '%a %s' " + JavaTrustStore.PATH))
        .contains("agentnest-placeholder-")
        .containsPattern("\\n644 [0-9]{5,}\\n");
  }

  @Test
  void javasHttpClientGetsTheInjectedHeaderFromTheProxy() throws Exception {
    String out = java("client", url("/whoami"));
    String withoutTheStore = javaWith("env -u JAVA_TOOL_OPTIONS ", "client", url("/whoami"));

    assertThat(out)
        .contains("exit 0")
        .contains("status 200")
        .contains("hello, authenticated caller");
    assertThat(api.nextRequestHeadersMatching("Authorization", Duration.ofSeconds(10)))
        .containsExactly("Bearer " + TOKEN);
    // It is the variable that makes the JVM trust the proxy: the image's own cacerts does not.
    assertThat(withoutTheStore).contains("exit 3").contains("PKIX path building failed");
  }

  @Test
  void javaVerifiesAHostWithoutRulesAgainstTheDefaultCasThroughAnOpaqueTunnel() throws Exception {
    String trusted = java("url", "https://other.test:" + other.port() + "/echo");
    String untrusted = java("client", "https://rogue.test:" + rogue.port() + "/echo");

    // The origin's own certificate reached the JVM (the proxy terminated nothing), verified by a
    // CA the store holds as a default; no credential went along.
    assertThat(trusted).contains("exit 0").contains("status 200");
    assertThat(trusted.toLowerCase(Locale.ROOT)).doesNotContain("authorization");
    assertThat(untrusted)
        .contains("exit 3")
        .contains("SSLHandshakeException")
        .contains("PKIX path building failed");
  }

  @Test
  void curlGetsAnAuthenticatedAnswerWithoutAToken() throws Exception {
    String out = sh("curl -sS --max-time 60 " + url("/whoami"));

    assertThat(out).contains("exit 0").contains("hello, authenticated caller");
    assertThat(api.nextRequestHeadersMatching("Authorization", Duration.ofSeconds(10)))
        .containsExactly("Bearer " + TOKEN);
  }

  @Test
  void pythonRequestsGetsAnAuthenticatedAnswerAndSeesOnlyAMaskInAnEcho() {
    String out =
        sh(
            "python3 -c \"import requests; "
                + "r = requests.get('"
                + url("/whoami")
                + "', timeout=60); print(r.status_code, r.text.strip()); "
                + "e = requests.get('"
                + url("/echo")
                + "', timeout=60); "
                + "print([l for l in e.text.splitlines() if l.lower().startswith('authorization')])\"");

    assertThat(out).contains("exit 0").contains("200 hello, authenticated caller");
    assertThat(out).contains("Bearer ****").doesNotContain(TOKEN);
  }

  @Test
  void gitLsRemoteListsTheRefsOfAnAuthenticatedRepository() throws Exception {
    String out =
        sh(
            "GIT_TERMINAL_PROMPT=0 git -c protocol.version=0 ls-remote "
                + url("/acme/app.git")
                + " 2>&1");

    assertThat(out)
        .contains("exit 0")
        .contains(LoopbackHttpsOrigin.GIT_COMMIT + "\tHEAD")
        .contains(LoopbackHttpsOrigin.GIT_COMMIT + "\trefs/heads/main");
    assertThat(api.nextRequestHeadersMatching("Authorization", Duration.ofSeconds(10)))
        .containsExactly("Bearer " + TOKEN);
  }

  @Test
  void requestsOutsideTheRulesAreAnsweredByTheProxyAndAudited() throws Exception {
    // Forget what earlier tests' requests left behind (bounded).
    for (int i = 0; i < 1000 && api.nextRequestHeaders(Duration.ZERO) != null; i++) {
      // drained
    }
    String delete =
        sh("curl -sS --max-time 60 -o /dev/null -w '%{http_code}' -X DELETE " + url("/whoami"));
    String traversal =
        sh(
            "curl -sS --max-time 60 --path-as-is -o /dev/null -w '%{http_code}' "
                + url("/acme/../admin"));

    assertThat(delete).contains("exit 0\n403");
    assertThat(traversal).contains("exit 0\n400");
    Awaitility.await()
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () ->
                assertThat(
                        audit.query(
                            AuditQuery.builder()
                                .sandbox(sandbox.id())
                                .type(AuditEvent.NETWORK_REQUEST_DENIED)
                                .build()))
                    .extracting(e -> e.data().get("method") + " " + e.data().get("rule"))
                    .contains("DELETE request-rules", "GET ambiguous-path"));
    // Neither request reached the server (it would have recorded its headers).
    assertThat(api.nextRequestHeaders(Duration.ofMillis(500))).isNull();
  }

  @Test
  void theTokenIsInNoVariableOrFileTheToolsCouldRead() {
    sh("curl -sS --max-time 60 -o /dev/null " + url("/whoami"));
    java(
        "url",
        "https://keys.test:" + keys.port() + "/whoami",
        "Authorization: Bearer $KEYS_API_KEY");
    for (String secret : List.of(TOKEN, KEY)) {
      // Written reversed: the scanning command itself must not contain what it looks for.
      String needle = new StringBuilder(secret).reverse().toString();
      String out =
          sh(
              "n=$(echo '"
                  + needle
                  + "' | rev); env | grep -c \"$n\"; "
                  + "grep -rlsF \"$n\" /tmp /workspace /etc /proc/[0-9]*/environ 2>/dev/null | wc -l; "
                  + "env | grep -E '^(SSL_CERT_FILE|CURL_CA_BUNDLE|GIT_SSL_CAINFO|REQUESTS_CA_BUNDLE)='"
                  + " | sort");

      assertThat(out)
          .contains("exit 0")
          .contains("\n0\n0\n")
          .contains("CURL_CA_BUNDLE=/tmp/.agentnest/ca-bundle.pem")
          .contains("GIT_SSL_CAINFO=/tmp/.agentnest/ca-bundle.pem");
    }
  }
}
