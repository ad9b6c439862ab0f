package io.agentnest.cli;

import io.agentnest.SandboxInfo;
import io.agentnest.spi.Labels;
import io.agentnest.spi.support.AgentNestHome;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Which sandboxes a command that acts on "all" of them means: those of this installation ({@code
 * AGENTNEST_HOME}) by default, every managed one on the engine with {@code --all-homes} (another
 * user's, another home's, and those made before sandboxes were labelled with their home).
 */
record HomeScope(boolean allHomes) {
  List<SandboxInfo> filter(List<SandboxInfo> all) {
    if (allHomes) {
      return all;
    }
    String mine = AgentNestHome.id();
    return all.stream().filter(s -> mine.equals(s.labels().get(Labels.HOME))).toList();
  }

  /** A line saying what the default scope left out, or null when it left out nothing. */
  static @Nullable String leftOut(int all, int shown) {
    int other = all - shown;
    return other <= 0
        ? null
        : other
            + " more managed sandbox"
            + (other == 1 ? " on this engine belongs" : "es on this engine belong")
            + " to another AGENTNEST_HOME or user: --all-homes includes them";
  }
}
