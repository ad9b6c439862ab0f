package io.agentnest.internal.snapshot;

import io.agentnest.SnapshotException;
import io.agentnest.spi.support.HostFiles;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * This installation's snapshot key ({@code snapshot.key}, mode 0600) and the HMAC-SHA256 it signs
 * manifests and the index with.
 */
final class SnapshotKey {
  private final Path file;
  private final Path dir;

  /** The key beside the store at {@code root}: {@code root/../snapshot.key}. */
  static SnapshotKey besideStore(Path root) {
    Path parent = root.getParent();
    Path dir = parent == null ? root : parent;
    return new SnapshotKey(dir.resolve("snapshot.key"), dir);
  }

  private SnapshotKey(Path file, Path dir) {
    this.file = file;
    this.dir = dir;
  }

  Path file() {
    return file;
  }

  /**
   * This installation's key: 32 random bytes in {@code snapshot.key}, made on first use with mode
   * 0600 (published with a hard link, so two processes racing to make it agree on one). A key that
   * others can read or write, or a symlink, is refused.
   */
  private byte[] key() throws IOException {
    Path k = file;
    if (!Files.exists(k, LinkOption.NOFOLLOW_LINKS)) {
      Files.createDirectories(dir);
      byte[] fresh = new byte[32];
      new SecureRandom().nextBytes(fresh);
      Path tmp = Files.createTempFile(dir, ".snapshot-key-", ".tmp");
      try {
        try {
          Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-------"));
        } catch (UnsupportedOperationException ignored) {
          // not a POSIX file system; the directory's permissions protect it
        }
        Files.write(tmp, fresh);
        try {
          Files.createLink(k, tmp);
        } catch (FileAlreadyExistsException raced) {
          // another process made it first: use theirs
        } catch (UnsupportedOperationException noLinks) {
          if (!Files.exists(k, LinkOption.NOFOLLOW_LINKS)) {
            Files.move(tmp, k);
          }
        }
      } finally {
        Files.deleteIfExists(tmp);
      }
    }
    if (!Files.isRegularFile(k, LinkOption.NOFOLLOW_LINKS)) {
      throw new SnapshotException(
          SnapshotException.Reason.TAMPERED,
          "the snapshot key " + k + " is not a regular file: remove it");
    }
    try {
      var perms = Files.getPosixFilePermissions(k, LinkOption.NOFOLLOW_LINKS);
      for (var bad :
          List.of(
              PosixFilePermission.GROUP_READ,
              PosixFilePermission.GROUP_WRITE,
              PosixFilePermission.OTHERS_READ,
              PosixFilePermission.OTHERS_WRITE)) {
        if (perms.contains(bad)) {
          throw new SnapshotException(
              SnapshotException.Reason.TAMPERED,
              "the snapshot key "
                  + k
                  + " can be read or written by other users, who could forge snapshots:"
                  + " 'chmod 600 "
                  + k
                  + "', and remove snapshots you did not take");
        }
      }
    } catch (UnsupportedOperationException ignored) {
      // not a POSIX file system
    }
    byte[] key;
    try (InputStream in = Files.newInputStream(k, LinkOption.NOFOLLOW_LINKS)) {
      key = in.readNBytes(4096);
    }
    if (key.length < 32) {
      throw new SnapshotException(
          SnapshotException.Reason.TAMPERED,
          "the snapshot key "
              + k
              + " is too short: remove it (existing snapshots"
              + " then fail verification) or restore it from a backup");
    }
    return key;
  }

  String hmac(byte[] body) throws IOException {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key(), "HmacSHA256"));
      return HexFormat.of().formatHex(mac.doFinal(body));
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  static String sha256(byte[] data) {
    return HexFormat.of().formatHex(HostFiles.newSha256().digest(data));
  }
}
