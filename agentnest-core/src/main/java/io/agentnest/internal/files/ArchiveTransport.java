package io.agentnest.internal.files;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;

/**
 * tar streams out of and into a sandbox's workspace: over the agent channel ({@link
 * SandboxArchives}) or over a server's HTTP API (the remote client). What comes out is a hostile
 * archive either way: the caller checks every entry it unpacks.
 */
public interface ArchiveTransport {
  /** Streams a tar of {@code paths} under {@code root} into {@code sink}. */
  SandboxArchives.Summary tarOut(
      String root, List<String> paths, boolean filesOnly, long maxBytes, OutputStream sink);

  /** Unpacks the tar read from {@code in} under {@code root}/{@code subPath}. */
  SandboxArchives.Summary tarIn(
      String root, String subPath, InputStream in, boolean strict, long maxBytes)
      throws IOException;
}
