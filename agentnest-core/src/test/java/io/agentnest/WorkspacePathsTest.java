package io.agentnest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class WorkspacePathsTest {

  @Test
  void refusalMessageShowsBidiOverridesAndControlsEscaped() {
    FileOperationException e =
        catchThrowableOfType(
            FileOperationException.class, () -> WorkspacePaths.check("\u202egnp.exe/../\u001b[2J"));
    assertThat(e.reason()).isEqualTo(FileOperationException.Reason.BAD_PATH);
    assertThat(e.getMessage())
        .contains("\\u202egnp.exe/../\\x1b[2J")
        .doesNotContain("\u202e")
        .doesNotContain("\u001b");
  }

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
    assertThat(WorkspacePaths.check(in)).isEqualTo(expected);
  }

  @ParameterizedTest
  @ValueSource(strings = {"", ".", "./", ".//.//", "././."})
  void emptyAndDotPathsNameTheRoot(String in) {
    assertThat(WorkspacePaths.check(in)).isEmpty();
  }

  @Test
  void checkEntryRefusesRoot() {
    assertBadPath(() -> WorkspacePaths.checkEntry(""), "workspace root");
    assertBadPath(() -> WorkspacePaths.checkEntry("./"), "workspace root");
  }

  @Test
  void checkEntryAcceptsEntries() {
    assertThat(WorkspacePaths.checkEntry("a//b")).isEqualTo("a/b");
  }

  @ParameterizedTest
  @ValueSource(strings = {"/etc/passwd", "/", "//a"})
  void absolutePathsAreRefused(String in) {
    assertBadPath(() -> WorkspacePaths.check(in), "is absolute");
  }

  @ParameterizedTest
  @ValueSource(strings = {"..", "../x", "a/..", "a/../b", "a/b/../../..", "./..", "a//..//b"})
  void dotDotIsRefusedAnywhere(String in) {
    assertBadPath(() -> WorkspacePaths.check(in), "contains '..'");
  }

  @Test
  void nulIsRefusedAndShownEscaped() {
    FileOperationException e =
        catchThrowableOfType(FileOperationException.class, () -> WorkspacePaths.check("a\0b"));
    assertThat(e.reason()).isEqualTo(FileOperationException.Reason.BAD_PATH);
    assertThat(e.getMessage()).contains("NUL").contains("a\\x00b").doesNotContain("\0");
  }

  @ParameterizedTest
  @ValueSource(strings = {"a\nb", "a/\tb", "\u001f", "x/\r", "\u0001name"})
  void controlCharactersAreRefused(String in) {
    assertBadPath(() -> WorkspacePaths.check(in), "control character");
  }

  @Test
  void tooLongPathIsRefused() {
    String longPath = "abcdefghi/".repeat(410) + "x"; // 4101 bytes, names are short
    assertBadPath(
        () -> WorkspacePaths.check(longPath), "longer than " + WorkspacePaths.MAX_PATH_BYTES);
  }

  @Test
  void pathAtTheByteLimitIsAccepted() {
    String name = "n".repeat(200);
    StringBuilder sb = new StringBuilder();
    while (sb.length() + name.length() + 1 <= WorkspacePaths.MAX_PATH_BYTES) {
      sb.append(name).append('/');
    }
    sb.append("x".repeat(WorkspacePaths.MAX_PATH_BYTES - sb.length()));
    assertThat(sb.length()).isEqualTo(WorkspacePaths.MAX_PATH_BYTES);
    assertThat(WorkspacePaths.check(sb.toString())).isEqualTo(sb.toString());
  }

  @Test
  void pathLengthIsCountedInUtf8Bytes() {
    // 2527 chars but 5029 bytes: refused although it is shorter than 4096 chars.
    String p = ("é".repeat(100) + "/").repeat(25) + "éé";
    assertThat(p.length()).isLessThan(WorkspacePaths.MAX_PATH_BYTES);
    assertBadPath(() -> WorkspacePaths.check(p), "longer than");
  }

  @Test
  void nameLongerThan255BytesIsRefused() {
    assertBadPath(
        () -> WorkspacePaths.check("dir/" + "a".repeat(256)),
        "name longer than " + WorkspacePaths.MAX_NAME_BYTES);
    // 128 two-byte characters = 256 bytes.
    assertBadPath(() -> WorkspacePaths.check("é".repeat(128)), "name longer than");
  }

  @Test
  void nameOf255BytesIsAccepted() {
    String name = "a".repeat(WorkspacePaths.MAX_NAME_BYTES);
    assertThat(WorkspacePaths.check(name + "/b")).isEqualTo(name + "/b");
  }

  @Test
  void longPathsAreShortenedInTheMessage() {
    String p = "/" + "x".repeat(1000);
    FileOperationException e =
        catchThrowableOfType(FileOperationException.class, () -> WorkspacePaths.check(p));
    assertThat(e.getMessage()).contains("...").hasSizeLessThan(400);
  }

  @Property(tries = 500)
  void checkNeverEscapesTheWorkspace(@ForAll("paths") String path) {
    String result;
    try {
      result = WorkspacePaths.check(path);
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
    assertThat(WorkspacePaths.check(result)).isEqualTo(result);
  }

  @Property(tries = 300)
  void checkOnFullyArbitraryStringsOnlyThrowsBadPath(@ForAll String path) {
    try {
      String result = WorkspacePaths.check(path);
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
    assertThatThrownBy(() -> WorkspacePaths.check(path))
        .isInstanceOf(FileOperationException.class)
        .hasMessageContaining("control character");
  }
}
