package io.agentnest.arch;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;

/**
 * The boundary of agentnest-core, shared through its test-jar: the main code of another module uses
 * core's public API ({@code io.agentnest}, {@code io.agentnest.config}, {@code io.agentnest.audit},
 * {@code io.agentnest.text}) and its SPI ({@code io.agentnest.spi}, {@code
 * io.agentnest.spi.support}), never {@code io.agentnest.internal..}. Each module runs it from a
 * test of its own with its base package. There are no exceptions: what a module needs from core
 * becomes an API entry point or a small documented SPI type.
 */
public final class ModuleBoundary {
  private ModuleBoundary() {}

  /** The main classes of a module (its tests may use internal seams, e.g. egress resolvers). */
  public static JavaClasses mainClassesOf(String basePackage) {
    return new ClassFileImporter()
        .withImportOption(new ImportOption.DoNotIncludeTests())
        .withImportOption(new ImportOption.DoNotIncludeJars())
        .importPackages(basePackage);
  }

  /**
   * Fails naming each class of {@code basePackage} that reaches an internal class of core, and each
   * circle among its own packages.
   */
  public static void check(String basePackage) {
    JavaClasses classes = mainClassesOf(basePackage);
    assertThat(classes).as("classes of %s (is the package right?)", basePackage).isNotEmpty();
    noClasses()
        .that()
        .resideInAPackage(basePackage + "..")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("io.agentnest.internal..")
        .because(
            "other modules use only core's public API and SPI: use an API type, or make what a"
                + " backend needs a small documented type in io.agentnest.spi")
        .check(classes);
    assertThat(PackageCycles.of(classes, basePackage))
        .as(
            "package circles in %s: give the dependency a direction (move the shared type down,"
                + " or invert it behind an interface of the lower package)",
            basePackage)
        .isEmpty();
  }
}
