package io.agentnest.config;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ApprovalPolicy;
import io.agentnest.ApprovalPolicy.Action;
import io.agentnest.SandboxConfig;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ApprovalsConfigTest {
  @Test
  void approvalsSectionMapsOntoThePolicy() {
    SandboxConfig c =
        AgentNestConfigTest.parse(
            """
            version: 1
            defaults:
              approvals:
                file_delete: ask
                system_modify: deny
                timeout: 90s
                writable_paths: "/workspace, /tmp, /var/cache/app"
                shell:
                  '\\bgit\\s+push\\b': ask
                  'curl .*[|] *sh': deny
                python:
                  socket.connect: ask
                  subprocess.Popen: allow
            """);
    ApprovalPolicy p = c.approvals();
    assertThat(p.fileDeletion()).isEqualTo(Action.ASK);
    assertThat(p.systemModification()).isEqualTo(Action.DENY);
    assertThat(p.timeout()).isEqualTo(Duration.ofSeconds(90));
    assertThat(p.writablePaths()).containsExactly("/workspace", "/tmp", "/var/cache/app");
    assertThat(p.shellRules())
        .extracting(r -> r.pattern().pattern() + "=" + r.action())
        .containsExactly("\\bgit\\s+push\\b=ASK", "curl .*[|] *sh=DENY");
    assertThat(p.pythonRules())
        .containsExactlyInAnyOrderEntriesOf(
            Map.of("socket.connect", Action.ASK, "subprocess.Popen", Action.ALLOW));
  }

  @Test
  void withoutASectionNothingNeedsApproval() {
    assertThat(AgentNestConfigTest.parse("version: 1\n").approvals())
        .isEqualTo(ApprovalPolicy.none());
    assertThat(ApprovalPolicy.none().isInactive()).isTrue();
  }

  @Test
  void badActionNamesTheKeyTheValueAndTheChoices() {
    String e =
        AgentNestConfigTest.errorOf(
            """
            version: 1
            defaults:
              approvals:
                python:
                  socket.connect: maybe
            """);
    assertThat(e).contains("agentnest.yaml:5").contains("socket.connect").contains("maybe");
    assertThat(e).contains("allow, ask or deny");
  }

  @Test
  void badChoiceForACategorySaysWhichAreAllowed() {
    String e =
        AgentNestConfigTest.errorOf(
            """
            version: 1
            defaults:
              approvals:
                file_delete: sometimes
            """);
    assertThat(e).contains("agentnest.yaml:4").contains("approvals.file_delete");
    assertThat(e).contains("allow").contains("ask").contains("deny");
  }

  @Test
  void invalidRegularExpressionSaysWhereAndHowToFix() {
    String e =
        AgentNestConfigTest.errorOf(
            """
            version: 1
            defaults:
              approvals:
                shell:
                  'rm (-rf': deny
            """);
    assertThat(e).contains("agentnest.yaml:5").contains("rm (-rf").contains("regular expression");
  }

  @Test
  void relativeWritablePathIsRefused() {
    String e =
        AgentNestConfigTest.errorOf(
            """
            version: 1
            defaults:
              approvals:
                writable_paths: "workspace"
            """);
    assertThat(e).contains("agentnest.yaml:4").contains("absolute");
  }

  @Test
  void recommendedPolicyRoundTripsThroughItsBuilder() {
    ApprovalPolicy r = ApprovalPolicy.recommended();
    assertThat(r.toBuilder().build()).isEqualTo(r);
    assertThat(r.isInactive()).isFalse();
    assertThat(r.writablePaths()).isEqualTo(List.of("/workspace", "/tmp"));
  }
}
