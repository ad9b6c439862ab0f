package io.agentnest.cli;

import io.agentnest.ConfigException;
import io.agentnest.mcp.McpTokenFile;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * The bearer token {@code agentnest mcp --http} requires, and what the person starting it is told.
 * In order: {@code --token-file}, {@code AGENTNEST_MCP_TOKEN}, nothing with {@code --no-token},
 * else, on loopback, the generated token of {@link McpTokenFile} (every local user and process can
 * reach 127.0.0.1). Off loopback the token must be given explicitly.
 *
 * @param token the token; null only with {@code --no-token}
 * @param generated the token file when the token came from it
 * @param fresh whether the token was generated just now (it is printed once, then)
 */
record McpHttpAuth(@Nullable String token, @Nullable Path generated, boolean fresh) {

  static McpHttpAuth resolve(
      @Nullable Path tokenFile, @Nullable String env, boolean noToken, boolean loopback)
      throws IOException {
    boolean envSet = env != null && !env.isBlank();
    if (noToken && (tokenFile != null || envSet)) {
      throw new ConfigException(
          "--no-token contradicts "
              + (tokenFile != null ? "--token-file" : "AGENTNEST_MCP_TOKEN")
              + ": give one or the other");
    }
    if (tokenFile != null) {
      if (!Files.isReadable(tokenFile)) {
        throw new ConfigException("--token-file " + tokenFile + ": cannot read the file");
      }
      return new McpHttpAuth(
          checked(Files.readString(tokenFile, StandardCharsets.UTF_8), "--token-file " + tokenFile),
          null,
          false);
    }
    if (env != null && envSet) {
      return new McpHttpAuth(checked(env, "AGENTNEST_MCP_TOKEN"), null, false);
    }
    if (noToken || !loopback) {
      // Off loopback, serving without an explicit token is refused by the server.
      return new McpHttpAuth(null, null, false);
    }
    McpTokenFile.Token t = McpTokenFile.loadOrCreate(McpTokenFile.defaultFile());
    return new McpHttpAuth(t.value(), t.file(), t.created());
  }

  private static String checked(String raw, String where) {
    String t = raw.strip();
    if (t.length() < 16) {
      throw new ConfigException(
          where + ": the token is shorter than 16 characters; use e.g. 'openssl rand -hex 32'");
    }
    return t;
  }

  /** The lines to print once the endpoint serves at {@code uri}: how a client connects. */
  List<String> notice(URI uri) {
    String add = "  claude mcp add --transport http agentnest " + uri + " --header ";
    if (token == null) {
      return List.of(
          "agentnest mcp: no bearer token (--no-token): every local user and process can use this"
              + " server",
          add.replace(" --header ", ""));
    }
    if (generated == null) {
      return List.of(
          "agentnest mcp: clients must send 'Authorization: Bearer <token>' (the token of"
              + " --token-file / AGENTNEST_MCP_TOKEN)");
    }
    if (fresh) {
      return List.of(
          "agentnest mcp: clients must send this bearer token, shown only now (kept in "
              + generated
              + ", mode 0600):",
          add + "\"Authorization: Bearer " + token + "\"");
    }
    return List.of(
        "agentnest mcp: clients must send the bearer token kept in " + generated + ":",
        add + "\"Authorization: Bearer $(cat " + generated + ")\"");
  }
}
