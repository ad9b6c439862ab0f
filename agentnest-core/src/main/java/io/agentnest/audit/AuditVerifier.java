package io.agentnest.audit;

import io.agentnest.audit.AuditSegments.Segment;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Re-reads an audit trail from its first record, across its rotated files and the active one, and
 * checks every hash and link of the chain, and that no rotated file is missing.
 */
final class AuditVerifier {
  private AuditVerifier() {}

  static VerifyReport verify(Path dir) {
    List<Segment> segments = AuditSegments.all(dir);
    if (segments.isEmpty()) {
      return VerifyReport.good(0, AuditEvent.GENESIS);
    }
    VerifyReport files = checkFiles(segments);
    if (files != null) {
      return files;
    }
    try (ChainReader r = new ChainReader(segments, 0, 0)) {
      return run(segments, r);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read the audit trail in " + dir, e);
    }
  }

  /** Rotated files are numbered 1, 2, 3, ... without a gap, and none is empty. */
  private static @Nullable VerifyReport checkFiles(List<Segment> segments) {
    long expected = 1;
    Segment before = null;
    for (Segment s : segments) {
      if (s.active()) {
        break;
      }
      if (s.number() != expected) {
        String missing = AuditSegments.rotatedName(expected);
        return VerifyReport.bad(
            before == null
                ? "file "
                    + missing
                    + " is missing: the trail starts at "
                    + s.name()
                    + " (rotated files were removed from the start; verify needs all of them)"
                : "file "
                    + missing
                    + " is missing between "
                    + before.name()
                    + " and "
                    + s.name()
                    + ": a rotated file was removed",
            0,
            0,
            0,
            AuditEvent.GENESIS);
      }
      try {
        if (Files.size(s.path()) == 0) {
          return VerifyReport.bad(
              "file "
                  + s.name()
                  + " is empty: a rotated file always holds records, so they were removed",
              0,
              0,
              0,
              AuditEvent.GENESIS);
        }
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read " + s.path(), e);
      }
      before = s;
      expected++;
    }
    return null;
  }

  private static VerifyReport run(List<Segment> segments, ChainReader r) throws IOException {
    MessageDigest sha = AuditJson.sha256();
    boolean many = segments.size() > 1;
    long prevSeq = 0;
    String prevHash = AuditEvent.GENESIS;
    @Nullable String prevPrevHash = null;
    String prevLine = "the genesis (first record)";
    String prevPrevLine = prevLine;
    long checked = 0;
    String line;
    while ((line = r.next()) != null) {
      long lineNo = r.line();
      // One file: "line 5", as always; several: "events-000002.jsonl line 5".
      String here = (many ? r.segment().name() + " " : "") + "line " + lineNo;
      long quick = JsonlReader.quickSeq(line);
      if (!r.terminated()) {
        return VerifyReport.bad(
            here
                + (quick > 0 ? " (seq " + quick + ")" : "")
                + " is truncated: the file ends without a newline in the middle of the last"
                + " record (an interrupted write or a cut file)",
            checked,
            lineNo,
            Math.max(quick, 0),
            prevHash);
      }
      AuditEvent e;
      try {
        e = AuditJson.parse(line);
      } catch (IllegalArgumentException ex) {
        return VerifyReport.bad(
            here + " is not a valid record (" + ex.getMessage() + "): edited or corrupt",
            checked,
            lineNo,
            Math.max(quick, 0),
            prevHash);
      }
      long seq = e.seq();
      String at = here + " (seq " + seq + ")";
      if (e.schema() != AuditEvent.SCHEMA) {
        return VerifyReport.bad(
            at + " has schema " + e.schema() + ", this version reads " + AuditEvent.SCHEMA,
            checked,
            lineNo,
            seq,
            prevHash);
      }
      String recomputed = AuditJson.recomputeHash(line, sha);
      if (recomputed == null || !recomputed.equals(e.hash())) {
        return VerifyReport.bad(
            at + ": record edited: its hash does not match its content",
            checked,
            lineNo,
            seq,
            prevHash);
      }
      if (seq == prevSeq + 1) {
        if (!e.prevHash().equals(prevHash)) {
          return VerifyReport.bad(
              at
                  + ": chain broken: prevHash is not the hash of "
                  + prevLine
                  + ": a record was replaced, or records were deleted or inserted and the rest"
                  + " renumbered",
              checked,
              lineNo,
              seq,
              prevHash);
        }
      } else if (seq == prevSeq && checked > 0) {
        if (e.hash().equals(prevHash)) {
          return VerifyReport.bad(
              at + ": record inserted: " + here + " repeats " + prevLine,
              checked,
              lineNo,
              seq,
              prevHash);
        }
        if (e.prevHash().equals(prevPrevHash)) {
          return VerifyReport.bad(
              prevLine
                  + " (seq "
                  + seq
                  + "): record inserted: "
                  + here
                  + " has the same seq and links to "
                  + prevPrevLine,
              checked - 1,
              lineNo - 1,
              seq,
              prevPrevHash);
        }
        return VerifyReport.bad(
            at
                + ": record inserted: seq "
                + seq
                + " is at "
                + (prevLine.startsWith("line ") && here.startsWith("line ")
                    ? "lines " + (lineNo - 1) + " and " + lineNo
                    : prevLine + " and " + here),
            checked,
            lineNo,
            seq,
            prevHash);
      } else if (seq <= prevSeq) {
        return VerifyReport.bad(
            at
                + ": records reordered (or an old record inserted): seq "
                + seq
                + " comes after seq "
                + prevSeq,
            checked,
            lineNo,
            seq,
            prevHash);
      } else {
        long missing = prevSeq + 1;
        String later = findLater(segments, r, missing, many);
        if (later != null) {
          return VerifyReport.bad(
              at
                  + ": records reordered: expected seq "
                  + missing
                  + " here, it comes later at "
                  + later,
              checked,
              lineNo,
              seq,
              prevHash);
        }
        return VerifyReport.bad(
            at
                + ": record"
                + (seq - missing > 1 ? "s" : "")
                + " deleted: seq "
                + (seq - missing > 1 ? missing + ".." + (seq - 1) : Long.toString(missing))
                + " missing before this line",
            checked,
            lineNo,
            seq,
            prevHash);
      }
      prevPrevHash = prevHash;
      prevHash = e.hash();
      prevSeq = seq;
      prevPrevLine = prevLine;
      prevLine = here;
      checked++;
    }
    return VerifyReport.good(checked, prevHash);
  }

  /** Where (after the line last read) the record {@code seq} is, or null. */
  private static @Nullable String findLater(
      List<Segment> segments, ChainReader at, long seq, boolean many) throws IOException {
    long firstLine = at.line();
    try (ChainReader r = new ChainReader(segments, at.index(), at.position())) {
      String line;
      while ((line = r.next()) != null) {
        if (JsonlReader.quickSeq(line) == seq) {
          // r counts from where it started: add the lines before it in the same file
          long n = r.index() == at.index() ? firstLine + r.line() : r.line();
          return (many ? r.segment().name() + " " : "") + "line " + n;
        }
      }
    }
    return null;
  }
}
