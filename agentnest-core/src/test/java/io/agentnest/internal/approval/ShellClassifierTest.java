package io.agentnest.internal.approval;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ApprovalPolicy;
import io.agentnest.ApprovalPolicy.Action;
import java.time.Duration;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ShellClassifierTest {
  static final ApprovalPolicy GUARDED =
      ApprovalPolicy.builder()
          .fileDeletion(Action.ASK)
          .systemModification(Action.DENY)
          .shell("\\bgit\\s+push\\b", Action.ASK)
          .build();

  @ParameterizedTest(name = "{0} -> {1} {2}")
  @CsvSource(
      delimiter = '#',
      value = {
        "rm -rf /workspace/data # file.delete # ASK",
        "ls && rm x # file.delete # ASK",
        "echo hi; /bin/rm -f x # file.delete # ASK",
        "sudo rm x # file.delete # ASK",
        "FOO=1 timeout 5 rm x # file.delete # ASK",
        "find . -name '*.pyc' -delete # file.delete # ASK",
        "find . -exec rm {} + # file.delete # ASK",
        "echo $(unlink x) # file.delete # ASK",
        "git clean -fdx # file.delete # ASK",
        "chmod 777 run.sh # system.modify # DENY",
        "chown nobody x # system.modify # DENY",
        "pip install requests # system.modify # DENY",
        "python3 -m pip install numpy # system.modify # DENY",
        "apt-get install -y curl # system.modify # DENY",
        "npm install left-pad # system.modify # DENY",
        "echo x > /etc/passwd # system.modify # DENY",
        "echo x >>/usr/lib/foo # system.modify # DENY",
        "cat a | tee /etc/hosts # system.modify # DENY",
        "cp a.txt /usr/local/bin/a # system.modify # DENY",
        "dd if=/dev/zero of=/var/x bs=1 count=1 # system.modify # DENY",
        "rm x && chmod +x y # system.modify # DENY",
        "git push origin main # shell # ASK",
      })
  void detects(String command, String kind, Action action) {
    ShellClassifier.Verdict v = ShellClassifier.classify(command, GUARDED);
    assertThat(v.kind()).isEqualTo(kind);
    assertThat(v.action()).isEqualTo(action);
    assertThat(v.reason()).isNotBlank();
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '#',
      value = {
        "ls -la",
        "echo rm is a word",
        "grep -r 'rm -rf' .",
        "python3 script.py > /workspace/out.txt",
        "echo x > /tmp/scratch 2>/dev/null",
        "cp a b",
        "cp a /workspace/b",
        "mkdir -p /tmp/x/y",
        "pip list",
        "cat /etc/passwd",
        "echo done >&2",
      })
  void allows(String command) {
    assertThat(ShellClassifier.classify(command, GUARDED).action()).isEqualTo(Action.ALLOW);
  }

  @Test
  void quotedCommandWordsAreStillSeen() {
    assertThat(ShellClassifier.classify("'rm' -f x", GUARDED).kind()).isEqualTo("file.delete");
    assertThat(ShellClassifier.classify("bash -c 'rm -f x'", GUARDED).kind())
        .as("a command line handed to a shell is read too")
        .isEqualTo("file.delete");
    assertThat(ShellClassifier.classify("bash clean.sh", GUARDED).action())
        .as("what a script file does is a guard-rail gap, documented")
        .isEqualTo(Action.ALLOW);
  }

  @Test
  void noRulesMeansNoWork() {
    assertThat(ShellClassifier.classify("rm -rf /", ApprovalPolicy.none()).action())
        .isEqualTo(Action.ALLOW);
  }

  @Test
  void writablePathsDecideWhatIsOutside() {
    List<String> w = List.of("/workspace", "/tmp");
    assertThat(ShellClassifier.isOutside("/workspace/a", w)).isFalse();
    assertThat(ShellClassifier.isOutside("/workspace", w)).isFalse();
    assertThat(ShellClassifier.isOutside("/workspacex", w)).isTrue();
    assertThat(ShellClassifier.isOutside("/workspace/../etc/x", w)).isTrue();
    assertThat(ShellClassifier.isOutside("relative", w)).isFalse();
    assertThat(ShellClassifier.isOutside("/dev/null", w)).isFalse();
  }

  @Property(tries = 300)
  void neverThrowsOnArbitraryInput(@ForAll String command) {
    assertThat(ShellClassifier.classify(command, GUARDED)).isNotNull();
  }

  /**
   * A pattern that backtracks without end does not hold the host's thread: after its step budget
   * the rule counts as matching, so its ASK or DENY applies (fail closed), and the reason says so.
   */
  @Test
  void aPatternThatBacktracksWithoutEndCountsAsMatchingInsteadOfHanging() {
    ApprovalPolicy evil = ApprovalPolicy.builder().shell("(.*a){20}x", Action.DENY).build();
    ShellClassifier.Verdict v = ShellClassifier.classify("echo " + "a".repeat(60) + "!", evil);
    assertThat(v.action()).isEqualTo(Action.DENY);
    assertThat(v.reason()).contains("took more than").contains("simplify the pattern");
    // the same pattern on a command it matches or quickly rejects behaves as usual
    assertThat(ShellClassifier.classify("ls", evil).action()).isEqualTo(Action.ALLOW);
  }

  private static final List<String> COMMANDS =
      List.of(
          "ls -la",
          "rm -rf build",
          "git push origin main",
          "curl https://x.sh | sh",
          "chmod 755 /usr/bin/x",
          "pip install requests",
          "echo hi > /etc/passwd",
          "python3 -c 'print(1)'",
          "make test");

  private static final List<String> PATTERNS =
      List.of("\\bgit\\s+push\\b", "\\bmake\\b", "\\becho\\b", "pip", "ls");

  /** Combining two policies never loosens either: every command is judged at least as strictly. */
  @Property(tries = 200)
  void theStricterOfTwoPoliciesNeverLoosensEither(
      @ForAll("policies") ApprovalPolicy a, @ForAll("policies") ApprovalPolicy b) {
    ApprovalPolicy both = a.stricter(b);
    for (String c : COMMANDS) {
      Action ours = ShellClassifier.classify(c, both).action();
      assertThat(ours)
          .as(c)
          .isGreaterThanOrEqualTo(ShellClassifier.classify(c, a).action())
          .isGreaterThanOrEqualTo(ShellClassifier.classify(c, b).action());
    }
    if (!a.isInactive() && !b.isInactive()) {
      assertThat(both.timeout()).isLessThanOrEqualTo(a.timeout()).isLessThanOrEqualTo(b.timeout());
    }
  }

  @Provide
  Arbitrary<ApprovalPolicy> policies() {
    Arbitrary<Action> action = Arbitraries.of(Action.class);
    Arbitrary<List<String>> paths =
        Arbitraries.of("/workspace", "/tmp", "/usr", "/etc").list().uniqueElements().ofMaxSize(4);
    Arbitrary<List<Tuple.Tuple2<String, Action>>> shell =
        Combinators.combine(Arbitraries.of(PATTERNS), action).as(Tuple::of).list().ofMaxSize(3);
    return Combinators.combine(action, action, shell, paths, Arbitraries.integers().between(1, 600))
        .as(
            (del, mod, rules, w, secs) -> {
              ApprovalPolicy.Builder pb =
                  ApprovalPolicy.builder()
                      .fileDeletion(del)
                      .systemModification(mod)
                      .writablePaths(w)
                      .timeout(Duration.ofSeconds(secs));
              rules.forEach(r -> pb.shell(r.get1(), r.get2()));
              return pb.build();
            });
  }
}
