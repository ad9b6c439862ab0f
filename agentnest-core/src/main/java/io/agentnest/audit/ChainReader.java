package io.agentnest.audit;

import io.agentnest.audit.AuditSegments.Segment;
import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Reads the lines of an audit trail in chain order, across its rotated files and the active one,
 * knowing for each line its file, its line number there and its offset.
 */
final class ChainReader implements Closeable {
  private final List<Segment> segments;
  private int index;
  private @Nullable JsonlReader reader;
  private long line;
  private Segment segment;

  /** From {@code offset} in {@code segments.get(start)}, then every later file from its start. */
  ChainReader(List<Segment> segments, int start, long offset) throws IOException {
    this.segments = segments;
    this.index = start;
    this.segment = segments.isEmpty() ? new Segment(Path.of(""), 0, true) : segments.get(start);
    if (start < segments.size()) {
      reader = new JsonlReader(segments.get(start).path(), offset);
    }
  }

  /** The next line (a file's unterminated last line included), or null after the last file. */
  @Nullable String next() throws IOException {
    while (reader != null) {
      String s = reader.next();
      if (s != null) {
        segment = segments.get(index);
        line++;
        return s;
      }
      reader.close();
      reader = null;
      if (++index < segments.size()) {
        reader = new JsonlReader(segments.get(index).path(), 0);
        line = 0;
      }
    }
    return null;
  }

  /** The file of the line last returned. */
  Segment segment() {
    return segment;
  }

  /** The 1-based number of the line last returned within its file (counted from the start). */
  long line() {
    return line;
  }

  boolean terminated() {
    return reader != null && reader.terminated();
  }

  /** Offset of the line last returned within its file. */
  long lineStart() {
    return reader == null ? 0 : reader.lineStart();
  }

  /** Offset just after the line last returned, within its file. */
  long position() {
    return reader == null ? 0 : reader.position();
  }

  /** Index in the list of the file being read. */
  int index() {
    return index;
  }

  @Override
  public void close() throws IOException {
    if (reader != null) {
      reader.close();
      reader = null;
    }
  }
}
