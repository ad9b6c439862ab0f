package io.agentnest.internal.git;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.GitException;
import io.agentnest.GitException.Reason;
import java.util.List;
import org.junit.jupiter.api.Test;

class GitNamesTest {

  @Test
  void branchNamesGitAcceptsPass() {
    for (String ok : List.of("main", "fix/readme", "feature/a-b_c.d", "v1.2", "user@host")) {
      assertThat(GitNames.branch(ok)).isEqualTo(ok);
    }
  }

  @Test
  void branchNamesCheckRefFormatRefusesAreRefusedBeforeGitRuns() {
    for (String bad :
        List.of(
            "",
            "-f",
            "--upload-pack=x",
            "a..b",
            "a b",
            "a~1",
            "a^",
            "a:b",
            "a?",
            "a*",
            "a[b",
            "a\\b",
            "a\nb",
            "a\u007fb",
            "/a",
            "a/",
            "a//b",
            "a.",
            ".a",
            "a/.b",
            "a.lock",
            "a/b.lock/c",
            "a@{1}",
            "@",
            "HEAD",
            "x".repeat(256))) {
      assertThatThrownBy(() -> GitNames.branch(bad))
          .as(bad)
          .isInstanceOfSatisfying(
              GitException.class, e -> assertThat(e.reason()).isEqualTo(Reason.BAD_REF))
          .hasMessageContaining("check-ref-format");
    }
  }

  @Test
  void revisionsTakeAncestrySuffixesButNothingElse() {
    for (String ok : List.of("main", "HEAD", "HEAD~1", "main^", "HEAD~2^1", "0123abcd", "v1.0")) {
      assertThat(GitNames.revision(ok)).isEqualTo(ok);
    }
    for (String bad : List.of("-p", "HEAD~x", "main..evil", "a~1b", "@{-1}", "HEAD:file", "")) {
      assertThatThrownBy(() -> GitNames.revision(bad))
          .as(bad)
          .isInstanceOfSatisfying(
              GitException.class, e -> assertThat(e.reason()).isEqualTo(Reason.BAD_REF));
    }
  }

  @Test
  void urlsAreHttpOrHttpsWithAHostAndNoCredentials() {
    assertThat(GitNames.url("https://github.com/org/app.git").getHost()).isEqualTo("github.com");
    assertThat(GitNames.url("http://git.test:8080/app.git").getPort()).isEqualTo(8080);
    for (String bad :
        List.of(
            "ext::sh -c id",
            "file:///etc",
            "ssh://git@github.com/org/app",
            "git@github.com:org/app.git",
            "https://user:pw@github.com/org/app",
            "https://token@github.com/org/app",
            "https:///app",
            "https://github.com/app?x=1",
            "--upload-pack=evil")) {
      assertThatThrownBy(() -> GitNames.url(bad))
          .as(bad)
          .isInstanceOfSatisfying(
              GitException.class, e -> assertThat(e.reason()).isEqualTo(Reason.BAD_URL));
    }
  }

  @Test
  void directoriesStayInTheWorkspaceAndAreNoOptions() {
    assertThat(GitNames.dir("app")).isEqualTo("app");
    assertThat(GitNames.dir("repos/app/")).isEqualTo("repos/app");
    for (String bad : List.of("", "..", "../x", "a/../b", "/abs", "-x", ".git", "a//b", "a b")) {
      assertThatThrownBy(() -> GitNames.dir(bad))
          .as(bad)
          .isInstanceOfSatisfying(
              GitException.class, e -> assertThat(e.reason()).isEqualTo(Reason.BAD_PATH));
    }
  }

  @Test
  void remoteNamesAreSimpleNames() {
    assertThat(GitNames.remote("origin")).isEqualTo("origin");
    assertThatThrownBy(() -> GitNames.remote("-o"))
        .isInstanceOfSatisfying(
            GitException.class, e -> assertThat(e.reason()).isEqualTo(Reason.BAD_REF));
  }

  @Test
  void gitsWordsAreShownWithTerminalEscapesWrittenOut() {
    assertThat(SandboxGit.printable("fatal: \u001b[2Jgone\r\nline\ttab\u0085"))
        .isEqualTo("fatal: \\x1b[2Jgone\\x0d\nline\ttab\\x85");
  }
}
