package io.agentnest.tck;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ForkReport;
import io.agentnest.Sandbox;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Fork: an independent copy with the files and the session's state, reported as it was made. */
public interface ForkContract extends BackendTarget {

  @Test
  default void aCopyHasTheFilesAndVariablesAndNeitherSeesTheOthersWrites(Sandbox parent) {
    parent.files().write("fork/f.txt", "parent");
    parent.runCode("counter = {'a': 5}\ndef scaled(x):\n    return x * 3");
    try (Sandbox copy = parent.fork()) {
      assertThat(copy.id()).isNotEqualTo(parent.id());
      assertThat(copy.files().readString("fork/f.txt")).isEqualTo("parent");
      assertThat(copy.runCode("counter['a'], scaled(2)").result()).isEqualTo("(5, 6)");
      ForkReport report = copy.forkReport().orElseThrow();
      assertThat(report.mode()).isEqualTo(target().forkMode());
      assertThat(report.parentId()).isEqualTo(parent.id());

      copy.files().write("fork/f.txt", "copy");
      copy.runCode("counter['a'] = 0");
      parent.runCode("only_parent = 1");
      assertThat(parent.files().readString("fork/f.txt")).isEqualTo("parent");
      assertThat(parent.runCode("counter['a']").result()).isEqualTo("5");
      assertThat(copy.runCode("'only_parent' in globals()").result()).isEqualTo("False");
    }
    assertThat(parent.exec("echo parent-alive").stdout()).isEqualTo("parent-alive\n");
  }

  @Test
  default void severalCopiesAreIndependentSandboxes(Sandbox parent) {
    parent.runCode("base = 21");
    List<Sandbox> copies = parent.fork(2);
    try {
      assertThat(copies).hasSize(2).extracting(Sandbox::id).doesNotHaveDuplicates();
      copies.get(0).runCode("mine = 0");
      copies.get(1).runCode("mine = 1");
      assertThat(copies.get(0).runCode("mine, base * 2").result()).isEqualTo("(0, 42)");
      assertThat(copies.get(1).runCode("mine, base * 2").result()).isEqualTo("(1, 42)");
    } finally {
      copies.forEach(Sandbox::destroy);
    }
  }
}
