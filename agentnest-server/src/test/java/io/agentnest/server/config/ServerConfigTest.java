package io.agentnest.server.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.ApprovalPolicy;
import io.agentnest.server.AgentNestServer;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class ServerConfigTest {
  @Test
  void defaultsListenOnLoopback8787() {
    ServerConfig c = ServerConfig.parse("", "server.yaml");
    assertThat(c.host()).isEqualTo("127.0.0.1");
    assertThat(c.port()).isEqualTo(8787);
    AgentNestServer.checkBind(c);
  }

  @Test
  void readsSizesDurationsAndPolicy() {
    ServerConfig c =
        ServerConfig.parse(
            "max_body: 2m\npolicy:\n  max_memory: 1g\n  max_ttl: 2h\n  allow_hosts: [pypi.org]\n",
            "server.yaml");
    assertThat(c.maxBodyBytes()).isEqualTo(2L << 20);
    assertThat(c.policy().maxMemoryBytes()).isEqualTo(1L << 30);
    assertThat(c.policy().maxTtl()).isEqualTo(Duration.ofHours(2));
    assertThat(c.policy().allowHosts()).containsExactly("pypi.org");
  }

  @Test
  void anUnknownKeyNamesFileLineColumnAndTheKnownKeys() {
    assertThatThrownBy(() -> ServerConfig.parse("listen:\n  hots: 0.0.0.0\n", "server.yaml"))
        .hasMessageContaining("server.yaml:2:")
        .hasMessageContaining("'hots'")
        .hasMessageContaining("host");
  }

  @Test
  void approverRoleRequiredIsOffByDefaultReadAsABooleanAndABadValueIsNamed() {
    assertThat(ServerConfig.parse("", "s.yaml").policy().approverRoleRequired()).isFalse();
    assertThat(
            ServerConfig.parse("policy:\n  approver_role_required: true\n", "s.yaml")
                .policy()
                .approverRoleRequired())
        .isTrue();
    assertThatThrownBy(
            () -> ServerConfig.parse("policy:\n  approver_role_required: maybe\n", "s.yaml"))
        .hasMessageContaining("s.yaml:2:");
    assertThatThrownBy(
            () -> ServerConfig.parse("policy:\n  approver_role_requried: true\n", "s.yaml"))
        .hasMessageContaining("unknown key 'approver_role_requried'")
        .hasMessageContaining("approver_role_required");
  }

  @Test
  void approvalsAreAFloorReadFromAPresetOrRulesAndBadOnesAreNamed() {
    assertThat(ServerConfig.parse("", "s.yaml").policy().approvals().isInactive()).isTrue();
    assertThat(
            ServerConfig.parse("policy:\n  approvals: recommended\n", "s.yaml")
                .policy()
                .approvals())
        .isEqualTo(ApprovalPolicy.recommended());
    ApprovalPolicy rules =
        ServerConfig.parse(
                "policy:\n  approvals:\n    base: recommended\n    file_delete: deny\n"
                    + "    shell: {'\\bterraform\\b': ask}\n    python: {socket.connect: ask}\n"
                    + "    timeout: 5m\n",
                "s.yaml")
            .policy()
            .approvals();
    assertThat(rules.fileDeletion()).isEqualTo(ApprovalPolicy.Action.DENY);
    assertThat(rules.systemModification()).isEqualTo(ApprovalPolicy.Action.ASK);
    assertThat(rules.shellRules()).anyMatch(r -> r.pattern().pattern().equals("\\bterraform\\b"));
    assertThat(rules.pythonRules()).containsEntry("socket.connect", ApprovalPolicy.Action.ASK);
    assertThat(rules.timeout()).isEqualTo(Duration.ofMinutes(5));
    assertThatThrownBy(() -> ServerConfig.parse("policy:\n  approvals: strict\n", "s.yaml"))
        .hasMessageContaining("s.yaml: policy.approvals")
        .hasMessageContaining("none or recommended");
    assertThatThrownBy(
            () -> ServerConfig.parse("policy:\n  approvals: {file_delete: maybe}\n", "s.yaml"))
        .hasMessageContaining("file_delete")
        .hasMessageContaining("allow, ask or deny");
    assertThatThrownBy(
            () -> ServerConfig.parse("policy:\n  approvals: {shell: {'(': deny}}\n", "s.yaml"))
        .hasMessageContaining("not a valid regular expression");
    assertThatThrownBy(() -> ServerConfig.parse("policy:\n  approvals: {rm: deny}\n", "s.yaml"))
        .hasMessageContaining("unknown key 'rm'")
        .hasMessageContaining("file_delete");
  }

  @Test
  void aBadDurationSaysHowToWriteOne() {
    assertThatThrownBy(() -> ServerConfig.parse("policy:\n  max_ttl: forever\n", "s.yaml"))
        .hasMessageContaining("90s, 30m, 2h or 1d");
  }

  @Test
  void aNonLoopbackBindWithoutTlsIsRefusedUnlessBehindAProxy() {
    ServerConfig open = ServerConfig.defaults().withListen("0.0.0.0", 8787);
    assertThatThrownBy(() -> AgentNestServer.checkBind(open))
        .hasMessageContaining("without TLS")
        .hasMessageContaining("--insecure-behind-proxy");
    AgentNestServer.checkBind(open.withInsecureBehindProxy(true));
  }

  @Test
  void askHostsAndAllowAddressesAreReadAndChecked() {
    ServerConfig none = ServerConfig.parse("", "server.yaml");
    assertThat(none.policy().askHosts()).isEmpty();
    assertThat(none.policy().allowAddresses()).isEmpty();
    ServerConfig c =
        ServerConfig.parse(
            "policy:\n  ask_hosts: [\"*.example.org\", docs.test]\n"
                + "  allow_addresses: [10.20.0.0/16]\n",
            "server.yaml");
    assertThat(c.policy().askHosts()).containsExactly("*.example.org", "docs.test");
    assertThat(c.policy().allowAddresses()).containsExactly("10.20.0.0/16");

    assertThatThrownBy(() -> ServerConfig.parse("policy: {ask_hosts: [\"a b\"]}", "s.yaml"))
        .hasMessageContaining("policy.ask_hosts 'a b'");
    assertThatThrownBy(
            () -> ServerConfig.parse("policy: {allow_addresses: [10.0.0.0/99]}", "s.yaml"))
        .hasMessageContaining("policy.allow_addresses");
  }
}
