package io.agentnest.audit;

import io.agentnest.audit.AuditSegments.Segment;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Follows a trail as other processes append to it ({@code agentnest audit tail}): polls the active
 * file, and when it is rotated under the reader, finishes the old file and goes on with the next
 * ones by number, so that no record is skipped or read twice across rotations.
 */
final class AuditFollower {
  private static final Logger LOG = LoggerFactory.getLogger(AuditFollower.class);

  private final Path dir;
  private final Path events;
  private final AuditIndex index;

  AuditFollower(Path dir, AuditIndex index) {
    this.dir = dir;
    this.events = dir.resolve(AuditLog.EVENTS_FILE);
    this.index = index;
  }

  /** See {@link AuditLog#tail(AuditQuery, long, Consumer, BooleanSupplier)}. */
  void tail(
      AuditQuery filter, long afterSeq, Consumer<AuditEvent> onEvent, BooleanSupplier keepGoing) {
    try {
      long number;
      long offset;
      long skipUpTo = -1;
      if (afterSeq < 0) {
        number = -1; // the end of the active file
        offset = Files.exists(events) ? Files.size(events) : 0;
      } else {
        AuditIndex.Located at = afterSeq == 0 ? null : index.locate(afterSeq);
        skipUpTo = afterSeq;
        if (at != null) {
          // The record's file by number: rotated by now or still the active one, follow() sees.
          number = AuditSegments.number(at.offset());
          offset = AuditSegments.offset(at.offset());
        } else {
          List<Segment> all = AuditSegments.all(dir);
          number = all.isEmpty() || all.get(0).active() ? -1 : all.get(0).number();
          offset = 0;
        }
      }
      follow(filter, number, offset, skipUpTo, onEvent, keepGoing);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + events, e);
    } catch (SQLException e) {
      throw new UncheckedIOException("audit index failed: " + e.getMessage(), new IOException(e));
    }
  }

  /**
   * Reads from file {@code number} (rotated by now, or still the active one; -1: the active one) at
   * {@code offset}, then each later file, then keeps following the active file; when it is rotated
   * meanwhile, reads the old one to its end and goes on with the files after it.
   */
  private void follow(
      AuditQuery filter,
      long number,
      long offset,
      long skipUpTo,
      Consumer<AuditEvent> onEvent,
      BooleanSupplier keepGoing)
      throws IOException {
    long current = number;
    long pos = offset;
    while (keepGoing.getAsBoolean()) {
      Path numbered = current < 0 ? null : dir.resolve(AuditSegments.rotatedName(current));
      if (numbered != null && Files.exists(numbered)) {
        try (JsonlReader r = new JsonlReader(numbered, pos)) {
          drain(r, pos, filter, skipUpTo, onEvent, keepGoing);
        }
        current = after(current);
        pos = 0;
        continue;
      }
      // The active file: opened only when the name still means the same file afterwards, so that
      // a rotation in between cannot make us read one file believing it is another.
      Object key = AuditSegments.fileKey(events);
      JsonlReader opened = key == null ? null : new JsonlReader(events, pos);
      boolean wrongFile =
          opened != null
              && numbered != null
              && Files.exists(numbered)
              && !AuditSegments.sameFile(key, AuditSegments.fileKey(numbered));
      if (opened == null
          || wrongFile
          || !AuditSegments.sameFile(key, AuditSegments.fileKey(events))) {
        // Not there yet, or file `current` was rotated just before the open: look again (it is
        // then read as a rotated file).
        if (opened != null) {
          opened.close();
        }
        if (!wrongFile && !pause()) {
          return;
        }
        continue;
      }
      boolean rotated = false;
      try (JsonlReader r = opened) {
        while (keepGoing.getAsBoolean()) {
          pos = drain(r, pos, filter, skipUpTo, onEvent, keepGoing);
          if (!AuditSegments.sameFile(key, AuditSegments.fileKey(events))) {
            // Rotated under us: what was appended before the rename is still to read.
            drain(r, pos, filter, skipUpTo, onEvent, keepGoing);
            rotated = true;
            break;
          }
          // The length of the file we have open (the name may mean another file by now).
          long size = r.length();
          if (size < pos) {
            LOG.warn("{} shrank from {} to {} bytes: following from its start", events, pos, size);
            pos = 0;
            r.seek(0);
          }
          if (!pause()) {
            return;
          }
        }
      }
      if (!rotated) {
        return;
      }
      // Go on after the file just read, which now has a number (several rotations may have
      // happened since: their files come first).
      long was = -1;
      for (Segment seg : AuditSegments.rotated(dir)) {
        if (AuditSegments.sameFile(key, AuditSegments.fileKey(seg.path()))) {
          was = seg.number();
        }
      }
      current = was < 0 ? -1 : after(was);
      pos = 0;
    }
  }

  /**
   * The number of the file after {@code number}: the first rotated one after it, else the one after
   * it, which is the active file now (named by number, not as "whatever is active": more rotations
   * may come before it is opened, and their files must be read first).
   */
  private long after(long number) {
    for (Segment seg : AuditSegments.rotated(dir)) {
      if (seg.number() > number) {
        return seg.number();
      }
    }
    return number + 1;
  }

  /** Passes the lines up to the end of {@code r} on; the position after the last whole line. */
  private long drain(
      JsonlReader r,
      long pos,
      AuditQuery filter,
      long skipUpTo,
      Consumer<AuditEvent> onEvent,
      BooleanSupplier keepGoing)
      throws IOException {
    long at = pos;
    String line;
    while (keepGoing.getAsBoolean() && (line = r.next()) != null) {
      if (!r.terminated()) {
        r.seek(r.lineStart());
        break;
      }
      at = r.position();
      AuditEvent e;
      try {
        e = AuditJson.parse(line);
      } catch (IllegalArgumentException ex) {
        LOG.warn("{}: skipping a malformed line at offset {}", events, r.lineStart());
        continue;
      }
      if (e.seq() > skipUpTo && filter.matches(e, line)) {
        onEvent.accept(e);
      }
    }
    return at;
  }

  /** Sleeps one poll interval; false when interrupted. */
  private static boolean pause() {
    try {
      Thread.sleep(AuditLog.TAIL_POLL_MS);
      return true;
    } catch (InterruptedException ex) {
      Thread.currentThread().interrupt();
      return false;
    }
  }
}
