package io.agentnest.cli;

import io.agentnest.docker.DockerEngineRequired;
import io.agentnest.tck.BackendUnderTest;
import io.agentnest.tck.ExecContract;
import io.agentnest.tck.SessionContract;
import io.agentnest.tck.StreamingContract;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The remote backend with its executions streamed over WebSocket instead of server-sent events
 * ({@code agentnest.remote-stream=websocket}, as AGENTNEST_REMOTE_STREAM would): the contract's
 * streaming, exec and session parts against the same kind of real {@code agentnest serve}.
 */
@ExtendWith(DockerEngineRequired.class)
@ExtendWith(RemoteWebSocketContractIT.WebSocketServer.class)
class RemoteWebSocketContractIT implements StreamingContract, ExecContract, SessionContract {

  static final class WebSocketServer extends RemoteContractIT.ServerExtension {
    @Override
    public void beforeAll(ExtensionContext context) {
      super.beforeAll(context);
      System.setProperty("agentnest.remote-stream", "websocket");
    }

    @Override
    public void afterAll(ExtensionContext context) {
      System.clearProperty("agentnest.remote-stream");
      super.afterAll(context);
    }
  }

  @Override
  public BackendUnderTest target() {
    return RemoteContractIT.remote();
  }
}
