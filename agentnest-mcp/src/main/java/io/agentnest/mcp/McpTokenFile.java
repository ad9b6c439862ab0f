package io.agentnest.mcp;

import com.sun.security.auth.module.UnixSystem;
import io.agentnest.ConfigException;
import io.agentnest.spi.support.AgentNestHome;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.Set;

/**
 * The bearer token of {@code agentnest mcp --http}, generated on first use and kept in a file only
 * its owner can read ({@code AGENTNEST_HOME/mcp/http-token}, mode 0600, in a 0700 directory), so
 * that other users and processes on this machine, which can all reach 127.0.0.1, cannot drive the
 * server. The file is created atomically with its content (a private temporary file linked into
 * place), and an existing one is used only if it is a regular file of this user that nobody else
 * can read or replace.
 */
public final class McpTokenFile {
  /** Nobody else may read the token file. */
  private static final Set<PosixFilePermission> FILE_PRIVATE =
      EnumSet.of(
          PosixFilePermission.GROUP_READ,
          PosixFilePermission.GROUP_WRITE,
          PosixFilePermission.GROUP_EXECUTE,
          PosixFilePermission.OTHERS_READ,
          PosixFilePermission.OTHERS_WRITE,
          PosixFilePermission.OTHERS_EXECUTE);

  /** Nobody else may replace the file in its directory. */
  private static final Set<PosixFilePermission> DIR_PRIVATE =
      EnumSet.of(PosixFilePermission.GROUP_WRITE, PosixFilePermission.OTHERS_WRITE);

  private McpTokenFile() {}

  /**
   * A token and where it is kept.
   *
   * @param created whether this call generated it (then it has not been shown to anyone yet)
   */
  public record Token(String value, Path file, boolean created) {
    @Override
    public String toString() {
      return "Token[file=" + file + ", created=" + created + "]";
    }
  }

  /** {@code AGENTNEST_HOME/mcp/http-token}. */
  public static Path defaultFile() {
    return AgentNestHome.dir().resolve("mcp").resolve("http-token");
  }

  /** The token in {@code file}, generating it (32 random bytes, hex) when there is none. */
  public static Token loadOrCreate(Path file) {
    try {
      Path dir = file.toAbsolutePath().getParent();
      if (dir == null) {
        throw new ConfigException("MCP token file " + file + ": name a file, not the root");
      }
      if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS)) {
        Files.createDirectories(
            dir,
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
      }
      checkPrivate(dir, "directory");
      if (!Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
        String token = generate();
        Path tmp =
            Files.createTempFile(
                dir,
                ".http-token",
                ".tmp",
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        try {
          Files.writeString(tmp, token + "\n", StandardCharsets.US_ASCII);
          Files.createLink(file, tmp);
          return new Token(token, file, true);
        } catch (FileAlreadyExistsException raced) {
          // Another server created it meanwhile: use theirs.
        } finally {
          Files.deleteIfExists(tmp);
        }
      }
      checkPrivate(file, "file");
      String token = Files.readString(file, StandardCharsets.US_ASCII).strip();
      if (token.length() < 16
          || token.length() > 512
          || !token.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
        throw new ConfigException(
            "MCP token file "
                + file
                + " does not hold a token (16-512 printable ASCII characters, no spaces): delete"
                + " it and 'agentnest mcp --http' makes a new one");
      }
      return new Token(token, file, false);
    } catch (IOException e) {
      throw new UncheckedIOException("MCP token file " + file + ": " + e.getMessage(), e);
    } catch (UnsupportedOperationException e) {
      throw new ConfigException(
          "cannot keep the MCP token private on this file system (no POSIX permissions): pass"
              + " --token-file FILE or AGENTNEST_MCP_TOKEN instead");
    }
  }

  private static String generate() {
    byte[] b = new byte[32];
    new SecureRandom().nextBytes(b);
    return HexFormat.of().formatHex(b);
  }

  /** Owned by this user, not a symlink, no access for group or others. */
  private static void checkPrivate(Path p, String what) throws IOException {
    PosixFileAttributes a =
        Files.readAttributes(p, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    boolean kind = what.equals("file") ? a.isRegularFile() : a.isDirectory();
    if (!kind) {
      throw new ConfigException(
          "MCP token " + what + " " + p + " is not a plain " + what + " (a symlink?): remove it");
    }
    Object uid = Files.getAttribute(p, "unix:uid", LinkOption.NOFOLLOW_LINKS);
    if (!(uid instanceof Integer u) || u.longValue() != new UnixSystem().getUid()) {
      throw new ConfigException(
          "MCP token " + what + " " + p + " belongs to another user: remove it");
    }
    Set<PosixFilePermission> open = EnumSet.noneOf(PosixFilePermission.class);
    open.addAll(a.permissions());
    open.retainAll(what.equals("file") ? FILE_PRIVATE : DIR_PRIVATE);
    if (!open.isEmpty()) {
      throw new ConfigException(
          "MCP token "
              + what
              + " "
              + p
              + " is open to other users (mode "
              + PosixFilePermissions.toString(a.permissions())
              + "): run 'chmod "
              + (what.equals("file") ? "600" : "go-w")
              + " "
              + p
              + "', or delete it for a new token");
    }
  }
}
