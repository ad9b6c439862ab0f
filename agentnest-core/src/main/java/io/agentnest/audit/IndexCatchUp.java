package io.agentnest.audit;

import io.agentnest.audit.AuditSegments.Segment;
import java.io.IOException;
import java.nio.file.Path;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Brings the SQLite index up to the files when a log opens: records a crashed process wrote but
 * never indexed, a deleted index, or files from elsewhere. The files are the truth; the index is
 * only a cache of them.
 */
final class IndexCatchUp {
  private static final Logger LOG = LoggerFactory.getLogger(IndexCatchUp.class);

  private IndexCatchUp() {}

  /**
   * Indexes the records of {@code dir}'s files that {@code idx} lacks; {@code fileLast} and {@code
   * fileHash} are where the chain ends in the files. An index that does not match the files is
   * rebuilt from them.
   */
  static void run(AuditIndex idx, Path dir, long fileLast, String fileHash)
      throws IOException, SQLException {
    long max = idx.maxSeq();
    if (max == 0 && fileLast == 0) {
      return;
    }
    long from;
    if (max > fileLast) {
      from = 0;
    } else {
      long count = idx.count();
      if (count == max) {
        from = max;
      } else {
        long lo = Math.max(0, max - 2L * AuditLog.QUEUE_CAPACITY);
        from = lo > 0 && idx.countUpTo(lo) == lo ? lo : 0;
      }
    }
    if (from == fileLast && from > 0) {
      AuditIndex.Located at = idx.locate(from);
      if (at != null && fileHash.equals(at.hash())) {
        return;
      }
      from = 0;
    }
    List<Segment> segments = AuditSegments.all(dir);
    int start = 0;
    long offset = 0;
    if (from > 0) {
      AuditIndex.Located at = idx.locate(from);
      start = at == null ? -1 : indexOf(segments, AuditSegments.number(at.offset()));
      offset =
          at == null || start < 0
              ? -1
              : afterLine(
                  segments.get(start).path(), from, AuditSegments.offset(at.offset()), at.hash());
      if (offset < 0) {
        from = 0;
        start = 0;
        offset = 0;
      }
    }
    if (from == 0 && max > 0) {
      LOG.warn(
          "{} does not match {}: rebuilding the index",
          dir.resolve(AuditLog.INDEX_FILE),
          dir.resolve(AuditLog.EVENTS_FILE));
      idx.clear();
    }
    if (segments.isEmpty()) {
      return;
    }
    long t0 = System.nanoTime();
    long n = 0;
    List<AuditIndex.Row> rows = new ArrayList<>(AuditLog.BATCH);
    try (ChainReader r = new ChainReader(segments, start, offset)) {
      String line;
      while ((line = r.next()) != null && r.terminated()) {
        try {
          rows.add(
              AuditIndex.Row.of(
                  AuditJson.parse(line),
                  line,
                  AuditSegments.position(r.segment().number(), r.lineStart())));
        } catch (IllegalArgumentException e) {
          LOG.warn(
              "{}: not indexing a malformed line at offset {}", r.segment().path(), r.lineStart());
          continue;
        }
        if (rows.size() == AuditLog.BATCH) {
          idx.insert(rows);
          n += rows.size();
          rows.clear();
        }
      }
    }
    if (!rows.isEmpty()) {
      idx.insert(rows);
      n += rows.size();
    }
    if (n > 0) {
      LOG.info(
          "indexed {} audit records from {} in {} ms",
          n,
          dir,
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
    }
  }

  private static int indexOf(List<Segment> segments, long number) {
    for (int i = 0; i < segments.size(); i++) {
      if (segments.get(i).number() == number) {
        return i;
      }
    }
    return -1;
  }

  /** Offset after the line at {@code offset} of {@code file} when it is record {@code seq}. */
  private static long afterLine(Path file, long seq, long offset, String hash) throws IOException {
    try (JsonlReader r = new JsonlReader(file, offset)) {
      String line = r.next();
      if (line == null || !r.terminated()) {
        return -1;
      }
      try {
        AuditEvent e = AuditJson.parse(line);
        return e.seq() == seq && e.hash().equals(hash) ? r.position() : -1;
      } catch (IllegalArgumentException e) {
        return -1;
      }
    }
  }
}
