package io.agentnest.internal.remote;

import io.agentnest.FileOperationException;
import io.agentnest.internal.files.ArchiveTransport;
import io.agentnest.internal.files.SandboxArchives;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.List;

/**
 * A remote sandbox's workspace as tar streams over {@code GET}/{@code PUT
 * /v1/sandboxes/{id}/archive}, so that uploads and exports run the same host-side checks as a local
 * sandbox's ({@code ArtifactTransfer}): checksums computed here, every entry checked here before it
 * lands on this host. The server checks what it unpacks again.
 */
final class RemoteArchives implements ArchiveTransport {
  private static final Duration WAIT = Duration.ofMinutes(10);

  private final RemoteClient client;
  private final RemoteSandbox.Routes routes;

  RemoteArchives(RemoteClient client, RemoteSandbox.Routes routes) {
    this.client = client;
    this.routes = routes;
  }

  @Override
  public SandboxArchives.Summary tarOut(
      String root, List<String> paths, boolean filesOnly, long maxBytes, OutputStream sink) {
    requireWorkspace(root);
    StringBuilder q =
        new StringBuilder(routes.path("/archive")).append("?maxBytes=").append(maxBytes);
    for (String p : paths) {
      q.append("&path=").append(RemoteClient.q(p));
    }
    byte[] tar = client.bytes("GET", q.toString(), new byte[0], null, WAIT);
    try {
      sink.write(tar);
    } catch (IOException e) {
      throw new FileOperationException(
          FileOperationException.Reason.HOST_IO, "writing the server's archive failed: " + e);
    }
    return new SandboxArchives.Summary(tar.length, paths.size(), List.of());
  }

  @Override
  public SandboxArchives.Summary tarIn(
      String root, String subPath, InputStream in, boolean strict, long maxBytes)
      throws IOException {
    requireWorkspace(root);
    byte[] tar = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, maxBytes + (1 << 20)));
    client.bytes(
        "PUT",
        routes.path("/archive") + "?path=" + RemoteClient.q(subPath),
        tar,
        "application/x-tar",
        WAIT);
    return new SandboxArchives.Summary(tar.length, 0, List.of());
  }

  private static void requireWorkspace(String root) {
    if (!root.equals(SandboxArchives.WORKSPACE)) {
      throw RemoteSandbox.unsupported("archives outside the workspace");
    }
  }
}
