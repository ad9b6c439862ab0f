package io.agentnest.internal.state;

import io.agentnest.spi.support.DiskGuard;
import java.io.BufferedOutputStream;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.jspecify.annotations.Nullable;

/**
 * Bytes a fork holds for a moment (state that came as frames, to be loaded into the copies): in
 * memory up to {@link #IN_MEMORY}, then in a temporary file (mode 0600, deleted on {@link
 * #close()}), written only while the disk keeps its reserve. So host memory stays small whatever
 * the state's size; the size itself is bounded by the fork's {@link StateBudget}.
 */
final class Spill extends OutputStream {
  static final int IN_MEMORY = 4 << 20;

  private final DiskGuard disk;
  private @Nullable ByteArrayOutputStream memory = new ByteArrayOutputStream(1 << 16);
  private @Nullable Path file;
  private @Nullable OutputStream out;
  private long size;

  Spill(DiskGuard disk) {
    this.disk = disk;
  }

  /** A spill into the system's temporary directory, keeping the state disk reserve. */
  static Spill temporary() {
    return new Spill(StateDisk.guard(Path.of(System.getProperty("java.io.tmpdir"))));
  }

  long size() {
    return size;
  }

  @Override
  public void write(int b) throws IOException {
    write(new byte[] {(byte) b}, 0, 1);
  }

  @Override
  public synchronized void write(byte[] b, int off, int len) throws IOException {
    ByteArrayOutputStream m = memory;
    if (m != null && size + len <= IN_MEMORY) {
      m.write(b, off, len);
      size += len;
      return;
    }
    if (m != null) {
      Path f = Files.createTempFile("agentnest-spill-", ".bin");
      file = f;
      out = new BufferedOutputStream(Files.newOutputStream(f), 1 << 16);
      disk.beforeWrite(m.size());
      m.writeTo(out);
      memory = null;
    }
    disk.beforeWrite(len);
    OutputStream o = out;
    if (o == null) {
      throw new IOException("the spill file is closed");
    }
    o.write(b, off, len);
    size += len;
  }

  /** The bytes written so far, from the start. */
  synchronized InputStream open() {
    ByteArrayOutputStream m = memory;
    if (m != null) {
      return new ByteArrayInputStream(m.toByteArray());
    }
    try {
      OutputStream o = out;
      if (o != null) {
        o.flush();
      }
      Path f = file;
      if (f == null) {
        throw new IOException("the spill file is gone");
      }
      return Files.newInputStream(f);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read back a fork's state", e);
    }
  }

  /** Deletes the file, if any. */
  @Override
  public synchronized void close() {
    memory = null;
    try {
      OutputStream o = out;
      if (o != null) {
        o.close();
      }
    } catch (IOException e) {
      // deleting anyway
    }
    out = null;
    Path f = file;
    file = null;
    if (f != null) {
      try {
        Files.deleteIfExists(f);
      } catch (IOException e) {
        f.toFile().deleteOnExit();
      }
    }
  }
}
