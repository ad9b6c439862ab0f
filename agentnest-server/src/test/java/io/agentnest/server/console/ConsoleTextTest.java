package io.agentnest.server.console;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.text.HumanText;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 42 (14): the console rendered an approval target of U+202E + "/etats-lla/" so that it read
 * "/all-state/". The console renders in the browser, so its escaping (console/text.js) is run here
 * in Node on the attack strings and compared with the host's one function, {@link HumanText}. Node
 * is required (as Chromium is for ConsoleIT): a missing one fails the test.
 */
class ConsoleTextTest {
  static final List<String> ATTACKS =
      List.of(
          "\u202e/etats-lla/",
          "rm -rf \u2066/tmp/x\u2069 \u2067/\u2069",
          "a\u200eb\u200fc\u061cd\u202ae\u202bf\u202cg\u202dh",
          "zero\u200bwidth\ufeffbom\u2028line\u2029para",
          "bell\u0007del\u007fc1\u009b[31m",
          "back\\u202eslash",
          "emoji \ud83d\ude00 stays, lone \ud800 does not",
          "tab\tand\nnewline");

  private static JsonNode runNode(Path dir, String script) throws Exception {
    Path text = dir.resolve("text.js");
    try (InputStream in = ConsoleApi.class.getResourceAsStream("/console/text.js")) {
      assertThat(in).as("console/text.js is packaged").isNotNull();
      Files.write(text, in.readAllBytes());
    }
    Path test = dir.resolve("test.js");
    Files.writeString(test, script, StandardCharsets.UTF_8);
    Process p;
    try {
      p = new ProcessBuilder("node", test.toString()).redirectErrorStream(true).start();
    } catch (IOException e) {
      throw new AssertionError(
          "Node.js is needed to test the console's escaping: apt-get install nodejs", e);
    }
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("node finished").isTrue();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as(out).isZero();
    return new ObjectMapper().readTree(out);
  }

  @Test
  void theConsoleShowsBidiAndInvisibleCharactersEscapedAsTheHostDoes(@TempDir Path dir)
      throws Exception {
    ObjectMapper m = new ObjectMapper();
    String script =
        "const t = require('./text.js')\n"
            + "const inputs = "
            + m.writer().with(JsonWriteFeature.ESCAPE_NON_ASCII).writeValueAsString(ATTACKS)
            + "\n"
            + "console.log(JSON.stringify(inputs.map((s) => ({ line: t.human(s), text:"
            + " t.humanText(s), clean: t.clean(s) }))))\n";
    JsonNode results = runNode(dir, script);
    for (int i = 0; i < ATTACKS.size(); i++) {
      String attack = ATTACKS.get(i);
      JsonNode r = results.get(i);
      assertThat(r.path("line").asText()).as(attack).isEqualTo(HumanText.line(attack));
      assertThat(r.path("text").asText()).as(attack).isEqualTo(HumanText.text(attack));
      String clean = r.path("clean").asText();
      assertThat(
              clean.codePoints().filter(c -> c != '\n' && c != '\t').noneMatch(HumanText::isUnsafe))
          .as("nothing invisible or reordering is left in %s", clean)
          .isTrue();
    }
    assertThat(results.get(0).path("line").asText()).isEqualTo("\\u202e/etats-lla/");
  }

  @Test
  void theConsoleLoadsTheEscapingBeforeItsAppAndServesIt() throws IOException {
    String html;
    try (InputStream in = ConsoleApi.class.getResourceAsStream("/console/index.html")) {
      html = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertThat(html.indexOf("src=\"text.js\""))
        .isPositive()
        .isLessThan(html.indexOf("src=\"app.js\""));
    assertThat(ConsoleApi.ASSETS).containsKey("text.js");
    String app;
    try (InputStream in = ConsoleApi.class.getResourceAsStream("/console/app.js")) {
      app = new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
    assertThat(app)
        .as("approval fields go through the escaping")
        .contains("human(a.target)")
        .contains("humanText(a.detail)")
        .doesNotContain("function clean(");
  }
}
