package io.agentnest.mcp;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

class McpGitToolsTest {
  static final String TOKEN = "tok-0123456789abcdef";

  @Test
  void theServersTokenGoesOnlyToTheHostsItIsFor() {
    McpGitTools git =
        new McpGitTools(
            Map.of(
                McpGitTools.TOKEN_VARIABLE,
                TOKEN,
                McpGitTools.HOSTS_VARIABLE,
                "github.com, git.example.com"));

    assertThat(git.authFor("https://github.com/org/app").secret())
        .hasValueSatisfying(s -> assertThat(s.reveal()).isEqualTo(TOKEN));
    assertThat(git.authFor("https://GIT.example.com/app.git").isNone()).isFalse();
    assertThat(git.authFor("https://evil.example.org/x").isNone()).isTrue();
    assertThat(git.authFor("https://github.com.evil.test/x").isNone()).isTrue();
    assertThat(git.authFor("not a url").isNone()).isTrue();
  }

  @Test
  void withoutAHostListTheTokenIsNotUsedAtAll() {
    assertThat(
            new McpGitTools(Map.of(McpGitTools.TOKEN_VARIABLE, TOKEN))
                .authFor("https://github.com/org/app")
                .isNone())
        .isTrue();
    assertThat(new McpGitTools(Map.of()).authFor("https://github.com/org/app").isNone()).isTrue();
  }
}
