package io.agentnest.docker;

import io.agentnest.AgentNestException;
import io.agentnest.BackendUnavailableException;
import io.agentnest.SandboxConfig;
import io.agentnest.docker.internal.DockerEngine;
import io.agentnest.tck.Prerequisites;
import java.util.List;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Integration tests need a real Docker engine and the base image. Outside CI a missing engine skips
 * them with a visible reason; under {@code CI=true} it fails them, so CI can never pass without
 * having run them.
 */
public final class DockerEngineRequired implements BeforeAllCallback {
  @Override
  public void beforeAll(ExtensionContext context) {
    String problem = null;
    try {
      DockerEngine engine = DockerEngine.connect();
      if (!engine.imageExists(SandboxConfig.DEFAULT_IMAGE)) {
        // A fresh machine: build the base image once, as 'agentnest image build' would.
        synchronized (DockerEngineRequired.class) {
          if (!engine.imageExists(SandboxConfig.DEFAULT_IMAGE)) {
            System.err.println("building " + SandboxConfig.DEFAULT_IMAGE + " for the tests...");
            BaseImageBuilder.build(SandboxConfig.DEFAULT_IMAGE, List.of(), "bookworm", n -> {});
          }
        }
      }
    } catch (BackendUnavailableException e) {
      problem = e.getMessage();
    } catch (AgentNestException e) {
      problem = "cannot build the base image: " + e.getMessage();
    }
    if (problem != null) {
      missing("the Docker engine", problem);
    }
  }

  /**
   * Fails under {@code CI=true}, skips visibly otherwise: a missing engine never passes. Kept here
   * for the tests of other modules that depend on this test-jar.
   */
  public static void missing(String what, String problem) {
    Prerequisites.missing(what, problem);
  }
}
