package io.agentnest.arch;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The boundary of agentnest-core, shared through its test-jar: the main code of another module uses
 * core's public API ({@code io.agentnest}, {@code io.agentnest.config}, {@code io.agentnest.audit})
 * and its SPI ({@code io.agentnest.spi}), never {@code io.agentnest.internal..}. Each module runs
 * it from a test of its own with its base package.
 *
 * <p>{@code stillAllowed} names internal classes a module used before the boundary existed and has
 * not yet been moved off (a ratchet: {@link #checkAllowancesAreStillNeeded} fails once one is no
 * longer used, so the list only shrinks). A new dependency on any other internal class fails.
 */
public final class ModuleBoundary {
  private static final String INTERNAL = "io.agentnest.internal..";

  private ModuleBoundary() {}

  /** The main classes of a module (its tests may use internal seams, e.g. egress resolvers). */
  public static JavaClasses mainClassesOf(String basePackage) {
    return new ClassFileImporter()
        .withImportOption(new ImportOption.DoNotIncludeTests())
        .withImportOption(new ImportOption.DoNotIncludeJars())
        .importPackages(basePackage);
  }

  /** Fails naming each class of {@code basePackage} that reaches a non-allowed internal class. */
  public static void check(String basePackage, Set<String> stillAllowed) {
    JavaClasses classes = mainClassesOf(basePackage);
    assertThat(classes).as("classes of %s (is the package right?)", basePackage).isNotEmpty();
    noClasses()
        .that()
        .resideInAPackage(basePackage + "..")
        .should()
        .dependOnClassesThat(resideInAPackage(INTERNAL).and(not(named(stillAllowed))))
        .because(
            "other modules use only core's public API and SPI: use an API type, or make what a"
                + " backend needs a small documented type in io.agentnest.spi")
        .check(classes);
  }

  /** Fails when an allowance is no longer used, so that it is removed from the list. */
  public static void checkAllowancesAreStillNeeded(String basePackage, Set<String> stillAllowed) {
    Set<String> used = internalClassesUsedBy(mainClassesOf(basePackage));
    assertThat(used)
        .as("internal classes %s still uses (remove allowances it no longer needs)", basePackage)
        .containsAll(stillAllowed);
  }

  static Set<String> internalClassesUsedBy(JavaClasses classes) {
    Set<String> used = new TreeSet<>();
    for (JavaClass c : classes) {
      for (Dependency d : c.getDirectDependenciesFromSelf()) {
        JavaClass target = d.getTargetClass().getBaseComponentType();
        if (target.getPackageName().startsWith("io.agentnest.internal")) {
          used.add(outermost(target).getName());
        }
      }
    }
    return used;
  }

  private static JavaClass outermost(JavaClass c) {
    JavaClass k = c;
    while (k.getEnclosingClass().isPresent()) {
      k = k.getEnclosingClass().get();
    }
    return k;
  }

  private static DescribedPredicate<JavaClass> named(Set<String> outerClassNames) {
    List<String> names = List.copyOf(outerClassNames);
    return DescribedPredicate.describe(
        "one of the allowances " + names, c -> names.contains(outermost(c).getName()));
  }
}
