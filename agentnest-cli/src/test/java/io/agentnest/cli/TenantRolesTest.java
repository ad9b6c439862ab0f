package io.agentnest.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.server.tenancy.ApiKey;
import io.agentnest.server.tenancy.KeyRole;
import io.agentnest.server.tenancy.TenantStore;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * `agentnest tenant key --role approver` and `tenant set --approver-role-required`: what the
 * operator types reaches the store the server reads, and a wrong role is a config error naming the
 * roles.
 */
class TenantRolesTest {
  @TempDir Path home;
  private final PrintStream out = System.out;
  private final ByteArrayOutputStream printed = new ByteArrayOutputStream();

  @BeforeEach
  void useHome() {
    System.setProperty("agentnest.home", home.toString());
    System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
  }

  @AfterEach
  void restore() {
    System.setOut(out);
    System.clearProperty("agentnest.home");
  }

  private TenantStore store() {
    return TenantStore.open(home.resolve(TenantStore.FILE), Clock.systemUTC());
  }

  @Test
  void anApproverKeyIsMintedStoredWithItsRoleAndListed() {
    assertThat(AgentNestCli.execute("tenant", "add", "search")).isZero();
    printed.reset();
    assertThat(AgentNestCli.execute("tenant", "key", "search", "--role", "approver")).isZero();
    String key = printed.toString(StandardCharsets.UTF_8).strip();
    try (TenantStore s = store()) {
      TenantStore.Check c = s.authenticate(key);
      assertThat(c.refusal()).isNull();
      assertThat(c.role()).isEqualTo(KeyRole.APPROVER);
      assertThat(s.keys("search"))
          .extracting(ApiKey::role)
          .containsExactly(KeyRole.AGENT, KeyRole.APPROVER);
    }
    printed.reset();
    assertThat(AgentNestCli.execute("tenant", "ls")).isZero();
    assertThat(printed.toString(StandardCharsets.UTF_8)).contains(keyId(key) + " (approver)");
  }

  @Test
  void theApproverRequirementIsSetAndClearedAndAnUnknownTenantOrRoleIsRefused() {
    assertThat(AgentNestCli.execute("tenant", "add", "search")).isZero();
    assertThat(AgentNestCli.execute("tenant", "set", "search", "--approver-role-required", "true"))
        .isZero();
    try (TenantStore s = store()) {
      assertThat(s.find("search").orElseThrow().approverRoleRequired()).isTrue();
    }
    printed.reset();
    assertThat(AgentNestCli.execute("tenant", "ls")).isZero();
    assertThat(printed.toString(StandardCharsets.UTF_8)).contains("(approvers answer)");
    assertThat(AgentNestCli.execute("tenant", "set", "search", "--approver-role-required", "false"))
        .isZero();
    try (TenantStore s = store()) {
      assertThat(s.find("search").orElseThrow().approverRoleRequired()).isFalse();
    }
    assertThat(AgentNestCli.execute("tenant", "set", "nobody", "--approver-role-required", "true"))
        .isEqualTo(ExitCodes.NOT_FOUND);
    assertThat(AgentNestCli.execute("tenant", "key", "search", "--role", "admin"))
        .isEqualTo(ExitCodes.CONFIG);
    assertThat(AgentNestCli.execute("tenant", "add", "strict", "--approver-role-required"))
        .isZero();
    try (TenantStore s = store()) {
      assertThat(s.find("strict").orElseThrow().approverRoleRequired()).isTrue();
    }
  }

  /** The id part of a key, as listings show it. */
  private static String keyId(String key) {
    return key.substring("ank_".length(), "ank_".length() + 16);
  }
}
