package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ExecEvent;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Secrets reach the code but never come back out unmasked. */
@ExtendWith(DockerEngineRequired.class)
class RedactionIT {
  static final String TOKEN = "tok-9f8e7d6c5b4a39281706";
  static Sandbox sandbox;

  @BeforeAll
  static void start() {
    sandbox =
        Sandbox.create(
            SandboxConfig.builder().secretEnv("SERVICE_TOKEN", Secret.of(TOKEN)).build());
  }

  @AfterAll
  static void stop() {
    if (sandbox != null) {
      sandbox.close();
    }
  }

  @Test
  void codeCanUseTheSecretButOutputIsMasked() {
    ExecResult r = sandbox.exec("echo \"token=$SERVICE_TOKEN\"; echo $SERVICE_TOKEN >&2");
    assertThat(r.stdout()).isEqualTo("token=[REDACTED:SERVICE_TOKEN]\n");
    assertThat(r.stderr()).isEqualTo("[REDACTED:SERVICE_TOKEN]\n");
    assertThat(r.redactions()).containsEntry("SERVICE_TOKEN", 2);
    // It is really there: its length and a hash prove the code got the value.
    assertThat(sandbox.exec("printf %s \"$SERVICE_TOKEN\" | wc -c").stdout().strip())
        .isEqualTo(String.valueOf(TOKEN.length()));
  }

  @Test
  void encodedAndSplitFormsAreMasked() {
    String code =
        "import os, sys, base64, binascii, urllib.parse, time\n"
            + "t = os.environ['SERVICE_TOKEN']\n"
            + "print(base64.b64encode(('x' + t).encode()).decode())\n"
            + "print(binascii.hexlify(t.encode()).decode())\n"
            + "print(urllib.parse.quote(t))\n"
            + "sys.stdout.write(t[:7]); sys.stdout.flush(); time.sleep(0.2)\n"
            + "sys.stdout.write(t[7:] + '\\n')\n";
    List<String> chunks = new ArrayList<>();
    ExecResult r =
        sandbox.runCode(code, ExecOptions.builder().onOutput(c -> chunks.add(c.text())).build());
    assertThat(r.stdout()).doesNotContain(TOKEN).doesNotContain(TOKEN.substring(4));
    assertThat(r.stdout().lines())
        .allSatisfy(l -> assertThat(l).contains("[REDACTED:SERVICE_TOKEN]"));
    assertThat(String.join("", chunks)).isEqualTo(r.stdout());
  }

  @Test
  void resultsTracebacksAndFileReadsAreMasked() {
    ExecResult value = sandbox.runCode("import os; os.environ['SERVICE_TOKEN']");
    assertThat(value.result()).isEqualTo("'[REDACTED:SERVICE_TOKEN]'");
    ExecResult err =
        sandbox.runCode("import os\nraise ValueError('bad ' + os.environ['SERVICE_TOKEN'])");
    assertThat(err.error().value()).isEqualTo("bad [REDACTED:SERVICE_TOKEN]");
    assertThat(err.error().traceback()).doesNotContain(TOKEN);
    sandbox.exec("echo \"cfg: $SERVICE_TOKEN\" > /workspace/leak.txt");
    assertThat(sandbox.files().readString("leak.txt")).isEqualTo("cfg: [REDACTED:SERVICE_TOKEN]\n");
  }

  @Test
  void wellKnownCredentialsAreMaskedInStreams() {
    StringBuilder streamed = new StringBuilder();
    for (ExecEvent e :
        sandbox.start(
            "echo AKIAIOSFODNN7EXAMPLE; echo 'postgres://u:pw12345@db/x'",
            ExecOptions.defaults())) {
      if (e instanceof ExecEvent.Output o) {
        streamed.append(o.chunk().text());
      }
    }
    assertThat(streamed.toString())
        .isEqualTo("[REDACTED:aws-access-key]\npostgres://u:[REDACTED:url-password]@db/x\n");
  }

  @Test
  void secretsNeverAppearInErrorMessagesFromTheAgent() {
    ExecResult r = sandbox.exec("cd \"/nonexistent/$SERVICE_TOKEN\"");
    assertThat(r.stderr()).doesNotContain(TOKEN);
  }
}
