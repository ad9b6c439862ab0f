package io.agentnest.internal.remote;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.FileInfo;
import io.agentnest.FileOperationException;
import io.agentnest.SandboxFiles;
import io.agentnest.internal.support.Json;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;

/** The workspace of a remote sandbox over the file routes. */
final class RemoteFiles implements SandboxFiles {
  private final RemoteClient client;
  private final RemoteSandbox.Routes routes;

  RemoteFiles(RemoteClient client, RemoteSandbox.Routes routes) {
    this.client = client;
    this.routes = routes;
  }

  private String at(String rest, String path) {
    return routes.path(rest) + "?path=" + RemoteClient.q(path);
  }

  @Override
  public FileInfo write(String path, byte[] data) {
    byte[] r =
        client.bytes(
            "PUT",
            at("/files/content", path),
            data,
            "application/octet-stream",
            Duration.ofMinutes(5));
    return info(client.parse(r));
  }

  @Override
  public byte[] read(String path) {
    return client.bytes(
        "GET", at("/files/content", path), new byte[0], null, Duration.ofMinutes(5));
  }

  @Override
  public FileInfo write(String path, InputStream in) {
    return info(
        client.parse(
            client.transfer("PUT", at("/files/content", path), in, null, Duration.ofMinutes(30))));
  }

  @Override
  public long read(String path, OutputStream out) {
    long[] n = {0};
    OutputStream counted =
        new OutputStream() {
          @Override
          public void write(int b) throws IOException {
            out.write(b);
            n[0]++;
          }

          @Override
          public void write(byte[] b, int off, int len) throws IOException {
            out.write(b, off, len);
            n[0] += len;
          }
        };
    client.transfer("GET", at("/files/content", path), null, counted, Duration.ofMinutes(30));
    return n[0];
  }

  @Override
  public List<FileInfo> list(String path) {
    return RemoteSandbox.files(client.get(at("/files", path)));
  }

  @Override
  public List<FileInfo> listRecursive(String path) {
    return RemoteSandbox.files(client.get(at("/files", path) + "&recursive=true"));
  }

  @Override
  public FileInfo stat(String path) {
    String name = path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
    int slash = name.lastIndexOf('/');
    String parent = slash < 0 ? "" : name.substring(0, slash);
    for (FileInfo f : list(parent)) {
      if (f.path().equals(name)
          || f.path().endsWith("/" + name)
          || f.path().equals(name.substring(slash + 1))) {
        return f;
      }
    }
    throw new FileOperationException(
        FileOperationException.Reason.NOT_FOUND, "no such file: " + path);
  }

  @Override
  public boolean exists(String path) {
    try {
      stat(path);
      return true;
    } catch (FileOperationException e) {
      if (e.reason() == FileOperationException.Reason.NOT_FOUND) {
        return false;
      }
      throw e;
    }
  }

  @Override
  public void delete(String path) {
    client.bytes("DELETE", at("/files", path), new byte[0], null, Duration.ofMinutes(1));
  }

  @Override
  public void deleteRecursive(String path) {
    client.bytes(
        "DELETE", at("/files", path) + "&recursive=true", new byte[0], null, Duration.ofMinutes(5));
  }

  @Override
  public FileInfo mkdir(String path) {
    ObjectNode body = Json.MAPPER.createObjectNode();
    body.put("path", path);
    return info(client.json("POST", routes.path("/files/mkdir"), body, Duration.ofMinutes(1)));
  }

  static FileInfo info(JsonNode f) {
    return new FileInfo(
        f.path("path").asText(),
        FileInfo.Type.valueOf(f.path("type").asText("other").toUpperCase(Locale.ROOT)),
        f.path("size").asLong(),
        f.path("mode").asInt(),
        Instant.parse(f.path("modified").asText()));
  }
}
