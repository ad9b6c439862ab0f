package io.agentnest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class RequestRuleTest {
  private static final RequestRule ACME = RequestRule.of("/repos/acme/", "GET");

  @Test
  void aPrefixMatchesAtASegmentBoundaryAndIgnoresTheQuery() {
    RequestRule user = RequestRule.of("/user");
    assertThat(user.allows("GET", "/user")).isTrue();
    assertThat(user.allows("DELETE", "/user/keys?page=2")).isTrue();
    assertThat(user.allows("GET", "/users")).isFalse();
    assertThat(user.allows("GET", "/user-evil")).isFalse();
    assertThat(ACME.allows("GET", "/repos/acme/app/issues?state=open")).isTrue();
    assertThat(ACME.allows("GET", "/repos/acme")).isFalse();
    assertThat(ACME.allows("POST", "/repos/acme/app")).isFalse();
    assertThat(ACME.allows("get", "/repos/acme/app")).isFalse();
  }

  @Test
  void methodsAreUpperCasedAndValidated() {
    assertThat(RequestRule.of("/x", "get", " Head ").methods())
        .containsExactlyInAnyOrder("GET", "HEAD");
    assertThat(RequestRule.of("/x", "GET", "HEAD").describe()).isEqualTo("GET,HEAD /x");
    assertThat(RequestRule.of("/x").describe()).isEqualTo("* /x");
    assertThatThrownBy(() -> RequestRule.of("/x", "GET /y")).hasMessageContaining("HTTP method");
    assertThatThrownBy(() -> RequestRule.of("repos/")).hasMessageContaining("must start with '/'");
    assertThatThrownBy(() -> RequestRule.of("/a/../b")).hasMessageContaining("'..' segment");
    assertThatThrownBy(() -> RequestRule.of("/a?b=c")).hasMessageContaining("query");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "/repos/acme/../other/secrets",
        "/repos/acme/./x",
        "/repos/acme/..",
        "/repos/acme/%2e%2e/other",
        "/repos/acme/%2E%2E/other",
        "/repos/acme/.%2e/other",
        "/repos/acme/%2e./other",
        "/repos/acme/..%2fother",
        "/repos/acme/..%2Fother",
        "/repos/acme/%5c..%5cother",
        "/repos/acme/..\\other",
        "/repos/acme/..;/other",
        "/repos/acme/x;jsessionid=1",
        "/repos/acme//other",
        "/repos/acme/%252e%252e/other",
        "/repos/acme/%c0%ae%c0%ae/other",
        "/repos/acme/%e0%80%ae/other",
        "/repos/acme/%00",
        "/repos/acme/%zz",
        "/repos/acme/%2",
        "/repos/acme/x#frag",
        "repos/acme/x",
      })
  void ambiguousPathsAreRefusedNotNormalised(String path) {
    assertThat(RequestRule.ambiguity(path)).as(path).isPresent();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "/repos/acme/app",
        "/repos/acme/app/",
        "/repos/acme/app?q=..%2f../x",
        "/repos/acme/caf%C3%A9",
        "/repos/acme/a%20b",
        "/repos/acme/..foo",
        "/repos/acme/...",
        "/",
      })
  void plainPathsPass(String path) {
    assertThat(RequestRule.ambiguity(path)).as(path).isEmpty();
  }

  /**
   * Whatever passes the check and the rule, every reading a server might make of it (decode once or
   * twice, backslash as slash, path parameters dropped, dot segments removed, slashes merged) is
   * still under the rule's prefix.
   */
  @Property(tries = 2000)
  void noAllowedPathLeavesThePrefixInAnyServersReading(@ForAll("hostilePaths") String path) {
    if (RequestRule.ambiguity(path).isPresent() || !ACME.allows("GET", path)) {
      return;
    }
    for (String view : serverViews(path)) {
      assertThat(view).as("%s read as %s", path, view).startsWith("/repos/acme/");
    }
  }

  @Property(tries = 500)
  void aRawDotDotSegmentIsNeverAllowed(@ForAll("hostilePaths") String path) {
    int q = path.indexOf('?');
    String p = q < 0 ? path : path.substring(0, q);
    if (p.contains("/../") || p.endsWith("/..")) {
      assertThat(RequestRule.ambiguity(path)).as(path).isPresent();
    }
  }

  @Provide
  Arbitrary<String> hostilePaths() {
    Arbitrary<String> piece =
        Arbitraries.of(
            "repos",
            "acme",
            "app",
            "..",
            ".",
            "",
            "%2e",
            "%2E%2e",
            "%2f",
            "%2F",
            "%5c",
            "\\",
            "..;",
            "x;y",
            "%252e",
            "%25",
            "%c0%ae",
            "%e0%80%ae",
            "a%41",
            "%ZZ",
            "%",
            "...",
            "%2e%2e%2f",
            "?",
            "#",
            "caf%C3%A9",
            "%00");
    return piece
        .list()
        .ofMinSize(1)
        .ofMaxSize(7)
        .map(parts -> "/repos/acme/" + String.join("/", parts));
  }

  private static List<String> serverViews(String target) {
    int q = target.indexOf('?');
    String path = q < 0 ? target : target.substring(0, q);
    List<String> views = new ArrayList<>();
    String once = decode(path);
    String twice = decode(once);
    for (String v : List.of(path, once, twice)) {
      views.add(normalise(v));
      views.add(normalise(v.replace('\\', '/')));
      views.add(normalise(v.replaceAll(";[^/]*", "")));
    }
    return views;
  }

  private static String decode(String s) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '%'
          && i + 2 < s.length()
          && Character.digit(s.charAt(i + 1), 16) >= 0
          && Character.digit(s.charAt(i + 2), 16) >= 0) {
        out.write(Integer.parseInt(s.substring(i + 1, i + 3), 16));
        i += 2;
      } else {
        out.write(c);
      }
    }
    return out.toString(StandardCharsets.UTF_8);
  }

  /** RFC 3986 remove_dot_segments, with empty segments merged as many servers do. */
  private static String normalise(String path) {
    Deque<String> out = new ArrayDeque<>();
    for (String seg : path.split("/", -1)) {
      if (seg.equals("..")) {
        out.pollLast();
      } else if (!seg.equals(".") && !seg.isEmpty()) {
        out.addLast(seg);
      }
    }
    return "/" + String.join("/", out) + (path.endsWith("/") ? "/" : "");
  }
}
