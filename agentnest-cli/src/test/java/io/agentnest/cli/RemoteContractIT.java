package io.agentnest.cli;

import io.agentnest.ForkReport;
import io.agentnest.SandboxConfig;
import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.spi.Backends;
import io.agentnest.tck.BackendContract;
import io.agentnest.tck.BackendUnderTest;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The {@code remote} backend passes the backend contract: every test of the suite runs in this JVM
 * against a real {@code agentnest serve} process (its own home, Docker behind it) through the HTTP
 * API, with this process pointed at it as AGENTNEST_URL would (the system properties {@code
 * agentnest.url} and {@code agentnest.api-key}), so the statics ({@code Sandbox.snapshots}, {@code
 * removeSnapshot}, {@code restore}) go to the server too.
 */
@ExtendWith(DockerEngineRequired.class)
@ExtendWith(RemoteContractIT.ServerExtension.class)
class RemoteContractIT implements BackendContract {

  private static final ExtensionContext.Namespace NS =
      ExtensionContext.Namespace.create(RemoteContractIT.class);

  /**
   * The server outlives this class's context: the suite's shared sandboxes are closed when that
   * context closes, after {@code @AfterAll}, and they need the server to be destroyed.
   */
  static class ServerExtension implements BeforeAllCallback, AfterAllCallback {
    @Override
    public void beforeAll(ExtensionContext context) {
      ServeProcess s =
          context
              .getRoot()
              .getStore(NS)
              .getOrComputeIfAbsent(
                  "server", k -> ServeProcess.start("contract"), ServeProcess.class);
      System.setProperty("agentnest.url", s.url);
      System.setProperty("agentnest.api-key", s.key);
    }

    /** Later test classes in this JVM use their own backends again. */
    @Override
    public void afterAll(ExtensionContext context) {
      System.clearProperty("agentnest.url");
      System.clearProperty("agentnest.api-key");
    }
  }

  @Override
  public BackendUnderTest target() {
    return remote();
  }

  /** The remote backend as this process's AGENTNEST_URL names it (the extension's server). */
  static BackendUnderTest remote() {
    return new BackendUnderTest(
        Backends.get("remote"),
        SandboxConfig.builder().backend("remote").build(),
        ForkReport.Mode.STATE_TRANSFER,
        false,
        false);
  }
}
