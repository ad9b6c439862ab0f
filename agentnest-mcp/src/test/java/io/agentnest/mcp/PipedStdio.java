package io.agentnest.mcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * An {@link AgentNestMcpServer} serving stdio over in-memory pipes, and the raw JSON-RPC client at
 * the other end: one line sent, one line read, as an MCP client over stdio does.
 *
 * @param server the server, closed with this
 * @param toServer the server's stdin
 * @param fromServer the server's stdout
 * @param serving the thread serving stdio
 */
record PipedStdio(
    AgentNestMcpServer server,
    PipedOutputStream toServer,
    BufferedReader fromServer,
    Thread serving)
    implements AutoCloseable {
  static final String INIT =
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
          + "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";

  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * A server whose calls must never need a sandbox: creating one fails the test with {@code why}.
   */
  static PipedStdio serveWithoutSandboxes(String why) throws IOException {
    return serve(
        AgentNestMcpServer.builder()
            .sandboxFactory(
                c -> {
                  throw new AssertionError(why);
                })
            .build());
  }

  /** Starts {@code server} on a thread of its own, reading and writing the pipes. */
  static PipedStdio serve(AgentNestMcpServer server) throws IOException {
    PipedOutputStream toServer = new PipedOutputStream();
    PipedInputStream serverIn = new PipedInputStream(toServer, 1 << 16);
    PipedInputStream fromServer = new PipedInputStream(1 << 20);
    PipedOutputStream serverOut = new PipedOutputStream(fromServer);
    Thread serving =
        new Thread(
            () -> {
              try {
                server.serveStdio(serverIn, serverOut);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            });
    serving.start();
    return new PipedStdio(
        server,
        toServer,
        new BufferedReader(new InputStreamReader(fromServer, StandardCharsets.UTF_8)),
        serving);
  }

  /** Sends one line (a newline is added). */
  void send(String line) throws IOException {
    toServer.write((line + "\n").getBytes(StandardCharsets.UTF_8));
    toServer.flush();
  }

  /** Reads the server's next line as JSON. */
  JsonNode receive() throws IOException {
    String line = fromServer.readLine();
    if (line == null) {
      throw new IOException("the server closed its stdout");
    }
    return JSON.readTree(line);
  }

  /** Closes the server's stdin; true when the server then ends within ten seconds. */
  boolean endsWhenStdinCloses() throws IOException, InterruptedException {
    toServer.close();
    serving.join(10_000);
    return !serving.isAlive();
  }

  @Override
  public void close() {
    server.close();
  }
}
