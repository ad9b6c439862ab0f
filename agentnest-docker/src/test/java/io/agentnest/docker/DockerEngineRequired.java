package io.agentnest.docker;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.agentnest.BackendUnavailableException;
import io.agentnest.SandboxConfig;
import io.agentnest.docker.internal.DockerEngine;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Integration tests need a real Docker engine and the base image. Outside CI a missing engine
 * skips them with a visible reason; under {@code CI=true} it fails them, so CI can never pass
 * without having run them.
 */
public final class DockerEngineRequired implements BeforeAllCallback {
  @Override
  public void beforeAll(ExtensionContext context) {
    String problem = null;
    try {
      DockerEngine engine = DockerEngine.connect();
      if (!engine.imageExists(SandboxConfig.DEFAULT_IMAGE)) {
        problem =
            "image " + SandboxConfig.DEFAULT_IMAGE + " missing: run 'agentnest image build'";
      }
    } catch (BackendUnavailableException e) {
      problem = e.getMessage();
    }
    if (problem == null) {
      return;
    }
    if ("true".equalsIgnoreCase(System.getenv("CI"))) {
      throw new IllegalStateException("CI=true and the Docker engine is not usable: " + problem);
    }
    assumeTrue(false, "SKIPPED (no Docker engine): " + problem);
  }
}
