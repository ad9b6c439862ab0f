package io.agentnest.arch;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Core's packages have a direction: a ratchet on package cycles. The packages that import each
 * other in a circle today are listed in {@code arch/package-cycles.txt}, one circle a line; no new
 * circle may form and none may grow, and a circle that is untied must leave the list (so the list
 * only shrinks, to empty). Nested packages count as their own ({@code internal.egress} is not
 * {@code internal}).
 */
class PackageCyclesTest {
  static final Path BASELINE = Path.of("src", "test", "resources", "arch", "package-cycles.txt");

  @Test
  void noPackageCycleFormsOrGrowsAndUntiedOnesLeaveTheList() throws IOException {
    List<String> now =
        PackageCycles.of(ModuleBoundary.mainClassesOf("io.agentnest"), "io.agentnest");
    List<String> baseline =
        Files.readAllLines(BASELINE, StandardCharsets.UTF_8).stream()
            .map(String::strip)
            .filter(l -> !l.isEmpty() && !l.startsWith("#"))
            .toList();
    // A circle may stay or shrink (all its packages were in one circle of the list), never grow.
    List<String> grown = PackageCycles.grown(now, baseline);
    assertThat(grown)
        .as(
            "package circles that are new or grew (a package imports one that imports it back,"
                + " directly or around): give the dependency a direction (move the shared type"
                + " down, or invert it behind an interface of the lower package)")
        .isEmpty();
    List<String> untied = baseline.stream().filter(c -> !now.contains(c)).toList();
    assertThat(untied)
        .as(
            "circles untied or shrunk (well done): write the list as it is now in "
                + BASELINE
                + ": "
                + now)
        .isEmpty();
  }
}
