package io.agentnest;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import io.agentnest.internal.DefaultSandbox;
import io.agentnest.spi.RuntimeBackend;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Layering of the core module: API and SPI stay free of backend and JSON libraries. */
class ArchitectureTest {
  /** The public API; io.agentnest.spi.. is the SPI. Everything else in core is internal. */
  private static final String[] API_PACKAGES = {
    "io.agentnest", "io.agentnest.config", "io.agentnest.audit", "io.agentnest.text"
  };

  private static JavaClasses classes;

  @BeforeAll
  static void importClasses() {
    classes =
        new ClassFileImporter()
            .withImportOption(new ImportOption.DoNotIncludeTests())
            .importPackages("io.agentnest");
  }

  @Test
  void importSeesTheCoreButNoTests() {
    assertThat(classes.contain(Sandbox.class)).isTrue();
    assertThat(classes.contain(DefaultSandbox.class)).isTrue();
    assertThat(classes.contain(RuntimeBackend.class)).isTrue();
    assertThat(classes.contain(ArchitectureTest.class)).isFalse();
  }

  @Test
  void apiAndSpiDoNotDependOnBackendOrJsonLibraries() {
    noClasses()
        .that()
        .resideInAnyPackage("io.agentnest", "io.agentnest.text", "io.agentnest.spi..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage("com.github.dockerjava..", "io.fabric8..", "com.fasterxml.jackson..")
        .because("the public API and the SPI must not leak Docker, Kubernetes or Jackson types")
        .check(classes);
  }

  @Test
  void coreDoesNotDependOnBackendsOrTheCli() {
    noClasses()
        .that()
        .resideInAPackage("io.agentnest..")
        .and()
        .resideOutsideOfPackages("io.agentnest.docker..", "io.agentnest.cli..")
        .should()
        .dependOnClassesThat()
        .resideInAnyPackage("io.agentnest.docker..", "io.agentnest.cli..")
        .because("backends plug in through the SPI; the core must not know them")
        .check(classes);
  }

  @Test
  void apiPackagesDoNotDependOnInternal() {
    noClasses()
        .that()
        .resideInAnyPackage(API_PACKAGES)
        .should()
        .dependOnClassesThat()
        .resideInAPackage("io.agentnest.internal..")
        .because(
            "the API reaches the runtime through the SPI (SandboxRuntime, AgentProbes, found with"
                + " ServiceLoader), so no import circle joins the API and the implementation")
        .check(classes);
  }

  @Test
  void sandboxStaticsGoThroughTheRuntimeSpi() {
    noClasses()
        .that()
        .belongToAnyOf(Sandbox.class, SandboxConfig.class)
        .should()
        .dependOnClassesThat()
        .resideInAPackage("io.agentnest.internal..")
        .check(classes);
  }

  @Test
  void spiDoesNotDependOnInternal() {
    noClasses()
        .that()
        .resideInAPackage("io.agentnest.spi..")
        .should()
        .dependOnClassesThat()
        .resideInAPackage("io.agentnest.internal..")
        .check(classes);
  }
}
