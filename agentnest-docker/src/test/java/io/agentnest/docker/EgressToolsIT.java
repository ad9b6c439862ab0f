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
import io.agentnest.internal.egress.LoopbackHttpsOrigin;
import io.agentnest.internal.egress.StaticResolver;
import io.agentnest.internal.egress.UpstreamTrust;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * curl, Python's requests and git, from Debian packages in an image built for this test, reach an
 * HTTPS server on the host's loopback through the intercepting proxy: the server sees the injected
 * token, the sandbox never holds it. The image is built once ({@link BaseImageBuilder}) and kept.
 */
@ExtendWith(DockerEngineRequired.class)
class EgressToolsIT {
  static final String IMAGE = "agentnest-test/egress-tools:latest";
  static final List<String> PACKAGES = List.of("curl", "python3-requests", "git");
  static final String TOKEN = "ghp_ToolsITOnlyTheProxyHoldsThis0123456789";

  static LoopbackHttpsOrigin api;
  static AuditLog audit;
  @TempDir static Path auditDir;
  static Sandbox sandbox;
  static final List<String> outputs = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    ensureImage();
    api = new LoopbackHttpsOrigin("api.test", "api.test", TOKEN);
    EgressResolvers.replaceForTests(StaticResolver.of("api.test", "127.0.0.1"));
    UpstreamTrust.replaceForTests(LoopbackHttpsOrigin.trusting(api.caCertificate()));
    audit = AuditLog.open(auditDir.resolve("audit"));
    // Configured as a user would: agentnest.yaml, the token in the host's environment.
    String yaml =
        """
        version: 1
        defaults:
          image: %s
          network:
            allow: ["api.test:%d"]
            allow_addresses: [127.0.0.1]
            credentials:
              - host: api.test
                header: "Authorization: Bearer ${secret:GITHUB_TOKEN}"
                rules:
                  - {methods: [GET, HEAD], path: /whoami}
                  - {methods: [GET], path: /echo}
                  - {methods: [GET], path: /acme/}
        """
            .formatted(IMAGE, api.port());
    SandboxConfig config =
        AgentNestConfig.parse(yaml, "agentnest.yaml", Map.of("GITHUB_TOKEN", TOKEN))
            .sandboxConfig();
    sandbox = Sandbox.create(config.toBuilder().auditLog(audit).build());
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
    if (sandbox != null) {
      sandbox.close();
    }
    if (api != null) {
      api.close();
    }
    if (audit != null) {
      audit.close();
    }
    assertThat(outputs).noneMatch(o -> o.contains(TOKEN));
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
    // Written reversed: the scanning command itself must not contain what it looks for.
    String needle = new StringBuilder(TOKEN).reverse().toString();
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
