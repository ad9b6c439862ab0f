package io.agentnest.microvm.internal;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.apache.commons.compress.archivers.cpio.CpioArchiveEntry;
import org.apache.commons.compress.archivers.cpio.CpioArchiveOutputStream;
import org.apache.commons.compress.archivers.cpio.CpioConstants;

/**
 * Writes the guest's initramfs (an uncompressed "newc" cpio: unpacking costs nothing under
 * emulation): busybox, the virtio modules Debian's cloud kernel does not build in, in load order, a
 * {@code /dev/console} for the init's output, and the init script.
 */
public final class Initramfs {
  /** Modules in the order they must load: ring and core first, then transport, then devices. */
  public static final List<String> MODULES =
      List.of("virtio_ring", "virtio", "virtio_mmio", "virtio_blk", "virtio_console");

  private Initramfs() {}

  public static void write(Path out, byte[] init, byte[] busybox, Path moduleTree)
      throws IOException {
    try (OutputStream file = Files.newOutputStream(out);
        CpioArchiveOutputStream cpio =
            new CpioArchiveOutputStream(file, CpioConstants.FORMAT_NEW)) {
      for (String d : List.of("bin", "dev", "proc", "sys", "newroot", "modules")) {
        dir(cpio, d);
      }
      CpioArchiveEntry console = new CpioArchiveEntry(CpioConstants.FORMAT_NEW, "dev/console");
      console.setMode(CpioConstants.C_ISCHR | 0600);
      console.setRemoteDeviceMaj(5);
      console.setRemoteDeviceMin(1);
      console.setNumberOfLinks(1);
      cpio.putArchiveEntry(console);
      cpio.closeArchiveEntry();
      file(cpio, "init", init, 0755);
      file(cpio, "bin/busybox", busybox, 0755);
      for (String m : MODULES) {
        file(cpio, "modules/" + m + ".ko", Files.readAllBytes(find(moduleTree, m + ".ko")), 0644);
      }
      file(
          cpio,
          "modules.order",
          (String.join("\n", MODULES) + "\n").getBytes(StandardCharsets.US_ASCII),
          0644);
      cpio.finish();
    }
  }

  private static Path find(Path tree, String name) throws IOException {
    try (Stream<Path> s = Files.walk(tree)) {
      return s.filter(p -> p.getFileName().toString().equals(name))
          .findFirst()
          .orElseThrow(() -> new IOException("the kernel package has no module " + name));
    }
  }

  private static void dir(CpioArchiveOutputStream cpio, String name) throws IOException {
    CpioArchiveEntry e = new CpioArchiveEntry(CpioConstants.FORMAT_NEW, name);
    e.setMode(CpioConstants.C_ISDIR | 0755);
    e.setNumberOfLinks(2);
    cpio.putArchiveEntry(e);
    cpio.closeArchiveEntry();
  }

  private static void file(CpioArchiveOutputStream cpio, String name, byte[] data, int mode)
      throws IOException {
    CpioArchiveEntry e = new CpioArchiveEntry(CpioConstants.FORMAT_NEW, name, data.length);
    e.setMode(CpioConstants.C_ISREG | mode);
    e.setNumberOfLinks(1);
    cpio.putArchiveEntry(e);
    cpio.write(data);
    cpio.closeArchiveEntry();
  }
}
