package io.agentnest.internal.approval;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ApprovalPolicy.Action;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A move onto an existing file destroys that file (issue 42, item 17: under recommended approvals
 * {@code mv} and E2B's {@code files.rename} replaced a file without a question). The classifier
 * cannot know whether the target exists when the command runs, so every {@code mv} that may replace
 * its target counts as a deletion; only no-clobber or a backup keeps the target.
 */
class ShellClassifierMoveTest {
  @ParameterizedTest(name = "[{index}] {0} -> {1} {2}")
  @CsvSource(
      delimiter = '#',
      value = {
        "mv a b # file.delete # ASK",
        "mv -f a b # file.delete # ASK",
        "mv --force a b # file.delete # ASK",
        "mv -T a b # file.delete # ASK",
        "mv -i a b # file.delete # ASK",
        "mv -nf a b # file.delete # ASK",
        "mv -n --force a b # file.delete # ASK",
        "mv -tn a # file.delete # ASK",
        "mv -- -n b # file.delete # ASK",
        "timeout 5 mv a b # file.delete # ASK",
        "cd x && mv a b # file.delete # ASK",
        "sh -c 'mv -f a b' # file.delete # ASK",
        "mv -n a b # shell # ALLOW",
        "mv -T -n -- a b # shell # ALLOW",
        "mv --no-clobber a b # shell # ALLOW",
        "mv --update=none a b # shell # ALLOW",
        "mv -fn a b # shell # ALLOW",
        "mv -t dir -n a # shell # ALLOW",
        "mv -b a b # shell # ALLOW",
        "mv --backup=numbered a b # shell # ALLOW",
      })
  void aMoveThatMayReplaceItsTargetIsADeletion(String command, String kind, Action action) {
    ShellClassifier.Verdict v = ShellClassifier.classify(command, ShellClassifierTest.GUARDED);
    assertThat(v.kind()).as(command + ": " + v.reason()).isEqualTo(kind);
    assertThat(v.action()).as(command).isEqualTo(action);
  }
}
