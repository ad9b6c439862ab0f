package io.agentnest.docker;

import io.agentnest.docker.internal.DockerEngine;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/** gVisor tests need runsc registered in Docker; under CI=true its absence is a failure. */
public final class GvisorRequired implements BeforeAllCallback {
  @Override
  public void beforeAll(ExtensionContext context) {
    if (DockerEngine.connect().runtimes().containsKey("runsc")) {
      return;
    }
    DockerEngineRequired.missing(
        "gVisor", "runsc is not registered in the Docker daemon (scripts/setup-host.sh does it)");
  }
}
