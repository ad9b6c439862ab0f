package io.agentnest.internal.files;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.agentnest.FileOperationException;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class PathRulesTest {

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "a//b/./c | a/b/c",
        "a/b/c | a/b/c",
        "./a | a",
        "a/ | a",
        "a/./././b// | a/b",
        "data/in.csv | data/in.csv",
        "...| ...",
        "a..b/c.. | a..b/c..",
        ".hidden/x | .hidden/x",
        "sp ace/ü.txt | sp ace/ü.txt"
      })
  void acceptedPathsAreNormalised(String in, String expected) {
    assertThat(PathRules.check(in)).isEqualTo(expected);
  }

  @ParameterizedTest
  @ValueSource(strings = {"", ".", "./", ".//.//", "././."})
  void emptyAndDotPathsNameTheRoot(String in) {
    assertThat(PathRules.check(in)).isEmpty();
  }

  @Test
  void checkEntryRefusesRoot() {
    assertBadPath(() -> PathRules.checkEntry(""), "workspace root");
    assertBadPath(() -> PathRules.checkEntry("./"), "workspace root");
  }

  @Test
  void checkEntryAcceptsEntries() {
    assertThat(PathRules.checkEntry("a//b")).isEqualTo("a/b");
  }

  @ParameterizedTest
  @ValueSource(strings = {"/etc/passwd", "/", "//a"})
  void absolutePathsAreRefused(String in) {
    assertBadPath(() -> PathRules.check(in), "is absolute");
  }

  @ParameterizedTest
  @ValueSource(strings = {"..", "../x", "a/..", "a/../b", "a/b/../../..", "./..", "a//..//b"})
  void dotDotIsRefusedAnywhere(String in) {
    assertBadPath(() -> PathRules.check(in), "contains '..'");
  }

  @Test
  void nulIsRefusedAndShownEscaped() {
    FileOperationException e =
        catchThrowableOfType(FileOperationException.class, () -> PathRules.check("a\0b"));
    assertThat(e.reason()).isEqualTo(FileOperationException.Reason.BAD_PATH);
    assertThat(e.getMessage()).contains("NUL").contains("a\\0b").doesNotContain("\0");
  }

  @ParameterizedTest
  @ValueSource(strings = {"a\nb", "a/\tb", "\u001f", "x/\r", "\u0001name"})
  void controlCharactersAreRefused(String in) {
    assertBadPath(() -> PathRules.check(in), "control character");
  }

  @Test
  void tooLongPathIsRefused() {
    String longPath = "abcdefghi/".repeat(410) + "x"; // 4101 bytes, names are short
    assertBadPath(() -> PathRules.check(longPath), "longer than " + PathRules.MAX_PATH_BYTES);
  }

  @Test
  void pathAtTheByteLimitIsAccepted() {
    String name = "n".repeat(200);
    StringBuilder sb = new StringBuilder();
    while (sb.length() + name.length() + 1 <= PathRules.MAX_PATH_BYTES) {
      sb.append(name).append('/');
    }
    sb.append("x".repeat(PathRules.MAX_PATH_BYTES - sb.length()));
    assertThat(sb.length()).isEqualTo(PathRules.MAX_PATH_BYTES);
    assertThat(PathRules.check(sb.toString())).isEqualTo(sb.toString());
  }

  @Test
  void pathLengthIsCountedInUtf8Bytes() {
    // 2527 chars but 5029 bytes: refused although it is shorter than 4096 chars.
    String p = ("é".repeat(100) + "/").repeat(25) + "éé";
    assertThat(p.length()).isLessThan(PathRules.MAX_PATH_BYTES);
    assertBadPath(() -> PathRules.check(p), "longer than");
  }

  @Test
  void nameLongerThan255BytesIsRefused() {
    assertBadPath(
        () -> PathRules.check("dir/" + "a".repeat(256)),
        "name longer than " + PathRules.MAX_NAME_BYTES);
    // 128 two-byte characters = 256 bytes.
    assertBadPath(() -> PathRules.check("é".repeat(128)), "name longer than");
  }

  @Test
  void nameOf255BytesIsAccepted() {
    String name = "a".repeat(PathRules.MAX_NAME_BYTES);
    assertThat(PathRules.check(name + "/b")).isEqualTo(name + "/b");
  }

  @Test
  void longPathsAreShortenedInTheMessage() {
    String p = "/" + "x".repeat(1000);
    FileOperationException e =
        catchThrowableOfType(FileOperationException.class, () -> PathRules.check(p));
    assertThat(e.getMessage()).contains("...").hasSizeLessThan(400);
  }

  @Property(tries = 500)
  void checkNeverEscapesTheWorkspace(@ForAll("paths") String path) {
    String result;
    try {
      result = PathRules.check(path);
    } catch (FileOperationException e) {
      assertThat(e.reason()).isEqualTo(FileOperationException.Reason.BAD_PATH);
      assertThat(e.getMessage()).startsWith("refused path '");
      return;
    }
    assertThat(result).doesNotStartWith("/").doesNotContain("\0").doesNotContain("//");
    if (!result.isEmpty()) {
      for (String part : result.split("/", -1)) {
        assertThat(part).isNotEmpty().isNotEqualTo("..").isNotEqualTo(".");
      }
    }
    // Normalisation is idempotent.
    assertThat(PathRules.check(result)).isEqualTo(result);
  }

  @Property(tries = 300)
  void checkOnFullyArbitraryStringsOnlyThrowsBadPath(@ForAll String path) {
    try {
      String result = PathRules.check(path);
      assertThat(result).doesNotStartWith("/");
      assertThat(result.split("/", -1)).doesNotContain("..");
    } catch (FileOperationException e) {
      assertThat(e.reason()).isEqualTo(FileOperationException.Reason.BAD_PATH);
    }
  }

  @Provide
  Arbitrary<String> paths() {
    Arbitrary<String> segment =
        Arbitraries.oneOf(
            Arbitraries.of("", ".", "..", "...", "a", "b.txt", "\0", "\n", "é"),
            Arbitraries.strings().ofMaxLength(8),
            Arbitraries.strings().withChars('a', '.', '/', '\\', '\0', '\u001f').ofMaxLength(6));
    Arbitrary<String> joined = segment.list().ofMaxSize(8).map(parts -> String.join("/", parts));
    return Arbitraries.oneOf(joined, joined.map(s -> "/" + s), joined.map(s -> s + "/"));
  }

  private static void assertBadPath(Runnable call, String messagePart) {
    assertThatThrownBy(call::run)
        .isInstanceOfSatisfying(
            FileOperationException.class,
            e -> assertThat(e.reason()).isEqualTo(FileOperationException.Reason.BAD_PATH))
        .hasMessageStartingWith("refused path '")
        .hasMessageContaining(messagePart);
  }

  @ParameterizedTest
  @ValueSource(strings = {"a\u007fb", "a\u0085b", "x/\u009b"})
  void deleteAndC1ControlCharactersAreRefused(String path) {
    assertThatThrownBy(() -> PathRules.check(path))
        .isInstanceOf(FileOperationException.class)
        .hasMessageContaining("control character");
  }
}
