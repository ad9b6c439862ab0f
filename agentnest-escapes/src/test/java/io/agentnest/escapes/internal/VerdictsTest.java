package io.agentnest.escapes.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

class VerdictsTest {
  @Test
  void readsTheLastVerdictLine() {
    String out =
        "noise\nAGENTNEST-VERDICT {\"through\": false, \"detail\": \"old\"}\n"
            + "AGENTNEST-VERDICT {\"through\": true, \"detail\": \"new\", \"data\": {\"k\": 1}}\n";
    Judgement j = Verdicts.parse(out).orElseThrow();
    assertThat(j.through()).isTrue();
    assertThat(j.detail()).isEqualTo("new");
    assertThat(j.data().path("k").asInt()).isEqualTo(1);
  }

  @Test
  void malformedOrSmuggledVerdictsAreNoVerdict() {
    assertThat(Verdicts.parse("")).isEmpty();
    assertThat(Verdicts.parse("AGENTNEST-VERDICT not json\n")).isEmpty();
    assertThat(Verdicts.parse("AGENTNEST-VERDICT {\"through\": \"no\"}\n")).isEmpty();
    // A verdict must start a line; one embedded in other output is not taken.
    assertThat(Verdicts.parse("x AGENTNEST-VERDICT {\"through\": false}\n")).isEmpty();
  }

  @Test
  void detailsAreCleanedAndBounded() {
    String d = Verdicts.clean("a\u001b[31mred\nline" + "x".repeat(5000));
    assertThat(d).doesNotContain("\u001b").doesNotContain("\n").hasSizeLessThan(700);
  }

  @Property(tries = 300)
  void parseNeverThrows(@ForAll String hostile) {
    Verdicts.parse(hostile);
    Verdicts.parse("AGENTNEST-VERDICT " + hostile);
    assertThat(Verdicts.clean(hostile).length()).isLessThanOrEqualTo(Verdicts.MAX_DETAIL + 3);
  }

  @Test
  void secretFormsCoverEveryEncodingTheRedactorKnows() {
    Map<String, String> forms = Judges.secretForms("anp-0123/+=&abcd");
    assertThat(forms).containsKeys("raw", "base64@0", "base64@1", "base64@2", "hex", "HEX", "url");
    assertThat(forms.get("hex")).isEqualTo("616e702d303132332f2b3d26616263 64".replace(" ", ""));
    assertThat(forms.get("url")).isEqualTo("anp-0123%2F%2B%3D%26abcd");
  }
}
