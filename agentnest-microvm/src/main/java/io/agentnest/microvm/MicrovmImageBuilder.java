package io.agentnest.microvm;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.AgentNestException;
import io.agentnest.ConfigException;
import io.agentnest.microvm.internal.GuestImage;
import io.agentnest.microvm.internal.HostTools;
import io.agentnest.microvm.internal.Initramfs;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * Builds a microVM guest image offline from Debian packages: {@code mmdebstrap} writes the root
 * filesystem (the same packages as the container base image, plus busybox for the initramfs and the
 * guest init), {@code mke2fs -d} turns it into an ext4 disk image without mounting anything, the
 * kernel is Debian's cloud kernel package, and the initramfs (busybox, the five virtio modules the
 * kernel has as modules, a short init script) is written here.
 *
 * <pre>{@code
 * MicrovmImageBuilder.build("agentnest/python:latest", List.of(), "bookworm", System.out::println);
 * }</pre>
 */
public final class MicrovmImageBuilder {
  /** What every guest has; the container base image's packages plus busybox for the initramfs. */
  public static final List<String> BASE_PACKAGES =
      List.of(
          "python3", "python3-dill", "ca-certificates", "procps", "coreutils", "busybox-static");

  /** The Debian package whose dependency names the kernel image package. */
  public static final String KERNEL_PACKAGE = "linux-image-cloud-amd64";

  private static final ObjectMapper JSON = new ObjectMapper();

  private MicrovmImageBuilder() {}

  /** Whether image {@code name} is built. */
  public static boolean exists(String name) {
    return GuestImage.of(name).exists();
  }

  /** The directory image {@code name} is (or would be) in. */
  public static Path directory(String name) {
    return GuestImage.dirFor(name);
  }

  /**
   * Builds image {@code name} with {@code extraPackages}; {@code progress} hears each stage.
   * Returns the image's directory. An existing image of that name is replaced only once the new one
   * is complete.
   */
  public static Path build(
      String name, List<String> extraPackages, String suite, Consumer<String> progress) {
    if (!name.matches("[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9._-]+)?")) {
      throw new ConfigException(
          "image name '" + name + "' is not valid, e.g. agentnest/python:latest");
    }
    if (!suite.matches("[a-z]+")) {
      throw new ConfigException("suite '" + suite + "' is not a Debian suite name, e.g. bookworm");
    }
    for (String p : extraPackages) {
      if (!p.matches("[a-z0-9][a-z0-9.+-]+")) {
        throw new ConfigException("'" + p + "' is not a Debian package name");
      }
    }
    Path mmdebstrap = tool("mmdebstrap", "mmdebstrap");
    Path mke2fs = tool("mke2fs", "e2fsprogs");
    Path aptGet = tool("apt-get", "apt");
    Path aptCache = tool("apt-cache", "apt");
    Path dpkgDeb = tool("dpkg-deb", "dpkg");
    GuestImage target = GuestImage.of(name);
    Path work;
    try {
      Files.createDirectories(GuestImage.root());
      work = Files.createTempDirectory(GuestImage.root(), ".build-");
    } catch (IOException e) {
      throw new AgentNestException("cannot create a build directory: " + e.getMessage(), e);
    }
    try {
      Path init = work.resolve("vminit.py");
      Files.write(init, resource("vminit.py"));
      Set<String> pkgs = new LinkedHashSet<>(BASE_PACKAGES);
      pkgs.addAll(extraPackages);
      progress.accept("root filesystem: mmdebstrap " + suite + " with " + String.join(",", pkgs));
      // A directory, not a tar: Debian 12's mke2fs (1.47.0) populates from directories only.
      Path tree = work.resolve("rootfs");
      run(
          List.of(
              mmdebstrap.toString(),
              "--quiet",
              "--variant=essential",
              "--include=" + String.join(",", pkgs),
              "--customize-hook=mkdir -p \"$1/usr/lib/agentnest\" \"$1/workspace\"",
              "--customize-hook=copy-in " + init + " /usr/lib/agentnest",
              suite,
              tree.toString()),
          work,
          20,
          " (are Debian's package mirrors reachable?)");
      Path out = work.resolve("image");
      Files.createDirectories(out);
      long size = (treeSize(tree) * 5 / 4 + (64L << 20)) >> 20;
      progress.accept("root disk: mke2fs -d (" + size + " MiB, read-only in every guest)");
      run(
          List.of(
              mke2fs.toString(),
              "-q",
              "-F",
              "-t",
              "ext4",
              "-O",
              "^has_journal",
              "-L",
              "agentnest-root",
              "-d",
              tree.toString(),
              out.resolve(GuestImage.ROOTFS).toString(),
              size + "M"),
          work,
          10,
          "");
      String kernelPkg = kernelPackage(aptCache, work);
      progress.accept("kernel: " + kernelPkg);
      run(
          List.of(aptGet.toString(), "download", "-q", kernelPkg),
          work,
          10,
          " (are Debian's package mirrors reachable?)");
      Path deb;
      try (Stream<Path> s = Files.list(work)) {
        deb =
            s.filter(p -> p.getFileName().toString().startsWith(kernelPkg + "_"))
                .findFirst()
                .orElseThrow(
                    () ->
                        new AgentNestException(
                            "apt-get download left no " + kernelPkg + " package"));
      }
      Path kdir = work.resolve("kernel");
      run(List.of(dpkgDeb.toString(), "-x", deb.toString(), kdir.toString()), work, 5, "");
      Path vmlinuz = only(kdir.resolve("boot"), "vmlinuz-");
      Files.copy(vmlinuz, out.resolve(GuestImage.KERNEL));
      progress.accept("initramfs: busybox and the virtio modules");
      Path modules = only(kdir.resolve("lib/modules"), "").resolve("kernel");
      Initramfs.write(out.resolve(GuestImage.INITRD), resource("init.sh"), busybox(tree), modules);
      Map<String, Object> meta = new LinkedHashMap<>();
      meta.put("image", GuestImage.normalise(name));
      meta.put("suite", suite);
      meta.put("packages", new ArrayList<>(pkgs));
      meta.put("kernel", vmlinuz.getFileName().toString().substring("vmlinuz-".length()));
      meta.put("built", Instant.now().toString());
      // Its guest init answers on the control port (GuestImage.hasControlPort).
      meta.put("vminit", GuestImage.VMINIT_CONTROL);
      Files.write(
          out.resolve(GuestImage.META),
          JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(meta));
      Path old = work.resolve("old");
      if (Files.exists(target.dir())) {
        Files.move(target.dir(), old, StandardCopyOption.ATOMIC_MOVE);
      }
      Files.move(out, target.dir(), StandardCopyOption.ATOMIC_MOVE);
      progress.accept("built " + GuestImage.normalise(name) + " in " + target.dir());
      return target.dir();
    } catch (IOException e) {
      throw new AgentNestException("microVM image build failed: " + e.getMessage(), e);
    } finally {
      deleteTree(work);
    }
  }

  private static byte[] resource(String name) throws IOException {
    try (InputStream in = MicrovmImageBuilder.class.getResourceAsStream(name)) {
      return Objects.requireNonNull(in, name).readAllBytes();
    }
  }

  /**
   * The versioned kernel package the metapackage depends on (apt-get download wants a real one).
   */
  private static String kernelPackage(Path aptCache, Path work) {
    String out = run(List.of(aptCache.toString(), "depends", KERNEL_PACKAGE), work, 2, "");
    for (String line : out.lines().toList()) {
      String l = line.strip();
      if (l.startsWith("Depends: linux-image-")) {
        return l.substring("Depends: ".length()).strip();
      }
    }
    throw new AgentNestException(
        "apt does not know " + KERNEL_PACKAGE + " ('apt-get update' first?): " + out.strip());
  }

  private static byte[] busybox(Path tree) throws IOException {
    for (String p : List.of("usr/bin/busybox", "bin/busybox")) {
      Path b = tree.resolve(p);
      if (Files.isRegularFile(b)) {
        return Files.readAllBytes(b);
      }
    }
    throw new AgentNestException("the root filesystem has no busybox (package busybox-static)");
  }

  private static long treeSize(Path tree) throws IOException {
    try (Stream<Path> s = Files.walk(tree)) {
      return s.filter(Files::isRegularFile)
          .mapToLong(
              p -> {
                try {
                  return Files.size(p);
                } catch (IOException e) {
                  return 0;
                }
              })
          .sum();
    }
  }

  private static Path only(Path dir, String prefix) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.getFileName().toString().startsWith(prefix))
          .findFirst()
          .orElseThrow(() -> new AgentNestException("nothing named " + prefix + "* in " + dir));
    }
  }

  private static Path tool(String name, String pkg) {
    return HostTools.require(name, pkg);
  }

  private static String run(List<String> cmd, Path dir, int minutes, String hint) {
    return HostTools.run(cmd, dir, Duration.ofMinutes(minutes), hint);
  }

  private static void deleteTree(Path dir) {
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (IOException ignored) {
      // a leftover build directory starts with '.build-' and is harmless
    }
  }
}
