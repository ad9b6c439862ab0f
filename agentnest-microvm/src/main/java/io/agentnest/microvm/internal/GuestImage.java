package io.agentnest.microvm.internal;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.ImageNotFoundException;
import io.agentnest.spi.support.AgentNestHome;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Optional;

/**
 * A guest image as {@code agentnest image build --microvm} leaves it: a kernel, an initramfs that
 * loads the virtio drivers and mounts the root disk, and the root filesystem as an ext4 disk image
 * that every guest of this image opens read-only.
 *
 * @param name the image name it was built under, e.g. {@code agentnest/python:latest}
 * @param dir the directory holding the files
 */
public record GuestImage(String name, Path dir) {
  public static final String KERNEL = "vmlinuz";
  public static final String INITRD = "initrd.img";
  public static final String ROOTFS = "root.ext4";
  public static final String META = "image.json";

  /** Where microVM images live: {@code AGENTNEST_HOME/microvm/images}. */
  public static Path root() {
    return AgentNestHome.dir().resolve("microvm").resolve("images");
  }

  /** {@code agentnest/python} and {@code agentnest/python:latest} name the same image. */
  public static String normalise(String image) {
    int slash = image.lastIndexOf('/');
    return image.indexOf(':', slash + 1) >= 0 ? image : image + ":latest";
  }

  /** The directory an image name maps to (its characters other than [a-z0-9.-] become '_'). */
  public static Path dirFor(String image) {
    return root().resolve(normalise(image).replaceAll("[^A-Za-z0-9.-]", "_"));
  }

  public static GuestImage of(String image) {
    return new GuestImage(normalise(image), dirFor(image));
  }

  public Path kernel() {
    return dir.resolve(KERNEL);
  }

  public Path initrd() {
    return dir.resolve(INITRD);
  }

  public Path rootfs() {
    return dir.resolve(ROOTFS);
  }

  public boolean exists() {
    return Files.isRegularFile(kernel())
        && Files.isRegularFile(initrd())
        && Files.isRegularFile(rootfs())
        && Files.isRegularFile(dir.resolve(META));
  }

  /**
   * The image's identity: a digest of its description, which names its packages, kernel and build
   * time, so a rebuilt image is a different one (snapshots record it).
   */
  public Optional<String> id() {
    if (!exists()) {
      return Optional.empty();
    }
    try {
      byte[] digest =
          MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(dir.resolve(META)));
      return Optional.of("sha256:" + HexFormat.of().formatHex(digest));
    } catch (IOException | NoSuchAlgorithmException e) {
      return Optional.empty();
    }
  }

  /** The guest init version that answers on the control port (the time and a seed). */
  public static final int VMINIT_CONTROL = 2;

  /**
   * Whether this image's guest init answers on the control port: images built before it keep the
   * clock they had after a restore (rebuild them).
   */
  public boolean hasControlPort() {
    try (InputStream in = Files.newInputStream(dir.resolve(META))) {
      return new ObjectMapper().readTree(in.readNBytes(64 * 1024)).path("vminit").asInt(1)
          >= VMINIT_CONTROL;
    } catch (IOException e) {
      return false;
    }
  }

  /** This image, or an error that says how to build it. */
  public GuestImage require() {
    if (!exists()) {
      throw new ImageNotFoundException(
          "microVM image '"
              + name
              + "' is not built (looked in "
              + dir
              + "): run 'agentnest image build --microvm"
              + (name.equals("agentnest/python:latest") ? "" : " --tag " + name)
              + "' (offline from Debian packages, about a minute)");
    }
    return this;
  }
}
