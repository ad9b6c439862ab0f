package io.agentnest.internal.approval;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ApprovalPolicy;
import io.agentnest.ApprovalPolicy.Action;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class PythonGuardTest {
  static final ApprovalPolicy DELETE_ASKS_MODIFY_DENIED =
      ApprovalPolicy.builder().fileDeletion(Action.ASK).systemModification(Action.DENY).build();

  static List<String> watched(PythonGuard g, String key) {
    List<String> out = new ArrayList<>();
    g.watch().path(key).forEach(n -> out.add(n.asText()));
    return out;
  }

  @Test
  void fileDeletionAlsoWatchesTruncationReplacementAndCtypesDeleters() {
    PythonGuard g = new PythonGuard(ApprovalPolicy.builder().fileDeletion(Action.ASK).build());
    assertThat(watched(g, "replace")).containsExactly("open", "os.rename", "os.truncate");
    assertThat(watched(g, "symbols")).contains("unlink", "unlinkat", "rename", "syscall");
    assertThat(watched(g, "events")).contains("ctypes.dlsym", "os.remove");
  }

  @ParameterizedTest(name = "{0} {1}")
  @CsvSource({
    "open, /workspace/data.csv",
    "os.rename, /workspace/data.csv",
    "os.truncate, /workspace/data.csv",
  })
  void destroyingAnExistingFilesContentIsADeletion(String event, String target) {
    PythonGuard g = new PythonGuard(DELETE_ASKS_MODIFY_DENIED);
    ShellClassifier.Verdict v = g.classify(new PythonGuard.Report(event, target, false, true));
    assertThat(v.kind()).isEqualTo("file.delete");
    assertThat(v.action()).isEqualTo(Action.ASK);
    assertThat(v.reason()).contains("existing file");
  }

  @Test
  void aTruncatingOpenOutsideTheWritablePathsIsBothAndTheStricterWins() {
    PythonGuard g = new PythonGuard(DELETE_ASKS_MODIFY_DENIED);
    ShellClassifier.Verdict v =
        g.classify(new PythonGuard.Report("open", "/etc/hosts", false, true));
    assertThat(v.kind()).isEqualTo("system.modify");
    assertThat(v.action()).isEqualTo(Action.DENY);
  }

  @Test
  void aNewFileInTheWorkspaceIsNoDeletion() {
    PythonGuard g = new PythonGuard(DELETE_ASKS_MODIFY_DENIED);
    assertThat(
            g.classify(new PythonGuard.Report("open", "/workspace/new.txt", false, false)).action())
        .isEqualTo(Action.ALLOW);
  }

  @ParameterizedTest(name = "{0}")
  @CsvSource({
    "unlink, file.delete, ASK",
    "unlinkat, file.delete, ASK",
    "renameat2, file.delete, ASK",
    "ftruncate, file.delete, ASK",
    "chmod, system.modify, DENY",
    "syscall, system.modify, DENY",
    "strlen, python, ALLOW",
  })
  void ctypesLookupsOfCFunctionsAreJudgedByWhatTheyDo(String name, String kind, Action action) {
    PythonGuard g = new PythonGuard(DELETE_ASKS_MODIFY_DENIED);
    ShellClassifier.Verdict v =
        g.classify(new PythonGuard.Report("ctypes.dlsym", name, false, false));
    assertThat(v.kind()).isEqualTo(kind);
    assertThat(v.action()).isEqualTo(action);
  }

  @Test
  void aCommandLineCutShortGetsTheStrictestAction() {
    PythonGuard g = new PythonGuard(ApprovalPolicy.builder().fileDeletion(Action.DENY).build());
    String head = "true" + " ".repeat(996);
    assertThat(g.classify(new PythonGuard.Report("subprocess.Popen", head, false, false)).action())
        .isEqualTo(Action.ALLOW);
    ShellClassifier.Verdict cut =
        g.classify(new PythonGuard.Report("subprocess.Popen", head, true, false));
    assertThat(cut.action()).isEqualTo(Action.DENY);
    assertThat(cut.reason()).contains("longer than");
  }
}
