package io.agentnest.server;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import io.agentnest.arch.ModuleBoundary;
import io.agentnest.arch.PackageCycles;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The server's packages have a direction: the faces ({@code v1}, {@code e2b}, {@code console}) sit
 * side by side over the service, so a change to one face cannot break another, and what every face
 * shares is decided once below them. Bottom to top: {@code tenancy}, {@code http}, {@code config},
 * {@code approvals}, {@code store} (PostgreSQL behind tenancy's interfaces), {@code service}; then
 * the faces and {@code audit}; the root package ({@code AgentNestServer}) wires them all and
 * nothing imports it back.
 */
class ServerPackagesTest {
  private static final String BASE = "io.agentnest.server";
  private static final List<String> FACES = List.of("v1", "e2b", "console");
  private static final List<String> BELOW_THE_FACES =
      List.of("tenancy", "http", "config", "approvals", "store", "service");

  private static final JavaClasses CLASSES = ModuleBoundary.mainClassesOf(BASE);

  @Test
  void noFaceDependsOnAnother() {
    for (String face : FACES) {
      noClasses()
          .that()
          .resideInAPackage(pkg(face))
          .should()
          .dependOnClassesThat()
          .resideInAnyPackage(
              FACES.stream().filter(f -> !f.equals(face)).map(f -> pkg(f)).toArray(String[]::new))
          .because(
              "the faces share only what lies below them: move what two faces need into service"
                  + " (a decision) or http (a wire helper)")
          .check(CLASSES);
    }
  }

  @Test
  void nothingBelowTheFacesDependsOnAFaceOrOnTheServer() {
    noClasses()
        .that()
        .resideInAnyPackage(BELOW_THE_FACES.stream().map(p -> pkg(p)).toArray(String[]::new))
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage(pkg("v1"), pkg("e2b"), pkg("console"), pkg("audit"), BASE)
        .because(
            "the service and what it stands on serve every face alike: a face hands them what"
                + " they need (a value, a callback), they never reach up for it")
        .check(CLASSES);
  }

  @Test
  void theFloorsBelowTheFacesKeepTheirOrder() {
    floor("metrics");
    floor("tenancy");
    floor("http", "tenancy");
    floor("config", "http");
    floor("approvals", "http", "tenancy");
    floor("store", "tenancy", "config", "approvals");
  }

  @Test
  void noPackageOfTheServerImportsOneThatImportsItBack() {
    slices().matching(BASE + ".(*)..").should().beFreeOfCycles().check(CLASSES);
    assertThat(PackageCycles.of(CLASSES, BASE))
        .as("package circles in the server (the root package included)")
        .isEmpty();
  }

  /** {@code name} depends on no server package but {@code below}. */
  private static void floor(String name, String... below) {
    List<String> allowed = new ArrayList<>(List.of(below));
    allowed.add(name);
    noClasses()
        .that()
        .resideInAPackage(pkg(name))
        .should()
        .dependOnClassesThat(
            DescribedPredicate.describe(
                "reside in a server package other than " + allowed,
                (JavaClass c) ->
                    c.getPackageName().startsWith(BASE)
                        && allowed.stream()
                            .noneMatch(a -> c.getPackageName().equals(BASE + "." + a))))
        .check(CLASSES);
  }

  private static String pkg(String name) {
    return BASE + "." + name + "..";
  }
}
