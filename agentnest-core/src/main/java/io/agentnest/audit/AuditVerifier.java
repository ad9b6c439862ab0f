package io.agentnest.audit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import org.jspecify.annotations.Nullable;

/** Re-reads {@code events.jsonl} from the start and checks every hash and link of the chain. */
final class AuditVerifier {
  private AuditVerifier() {}

  static VerifyReport verify(Path events) {
    if (!Files.exists(events)) {
      return VerifyReport.good(0, AuditEvent.GENESIS);
    }
    try (JsonlReader r = new JsonlReader(events, 0)) {
      return run(events, r);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + events, e);
    }
  }

  private static VerifyReport run(Path events, JsonlReader r) throws IOException {
    MessageDigest sha = AuditJson.sha256();
    long prevSeq = 0;
    String prevHash = AuditEvent.GENESIS;
    @Nullable String prevPrevHash = null;
    long checked = 0;
    long lineNo = 0;
    String line;
    while ((line = r.next()) != null) {
      lineNo++;
      long quick = JsonlReader.quickSeq(line);
      if (!r.terminated()) {
        return VerifyReport.bad(
            "line "
                + lineNo
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
            "line "
                + lineNo
                + " is not a valid record ("
                + ex.getMessage()
                + "): edited or corrupt",
            checked,
            lineNo,
            Math.max(quick, 0),
            prevHash);
      }
      long seq = e.seq();
      String at = "line " + lineNo + " (seq " + seq + ")";
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
                  + (lineNo == 1 ? "the genesis (first record)" : "line " + (lineNo - 1))
                  + ": a record was replaced, or records were deleted or inserted and the rest"
                  + " renumbered",
              checked,
              lineNo,
              seq,
              prevHash);
        }
      } else if (seq == prevSeq && lineNo > 1) {
        if (e.hash().equals(prevHash)) {
          return VerifyReport.bad(
              at + ": record inserted: line " + lineNo + " repeats line " + (lineNo - 1),
              checked,
              lineNo,
              seq,
              prevHash);
        }
        if (e.prevHash().equals(prevPrevHash)) {
          return VerifyReport.bad(
              "line "
                  + (lineNo - 1)
                  + " (seq "
                  + seq
                  + "): record inserted: line "
                  + lineNo
                  + " has the same seq and links to line "
                  + (lineNo - 2),
              checked - 1,
              lineNo - 1,
              seq,
              prevPrevHash);
        }
        return VerifyReport.bad(
            at
                + ": record inserted: seq "
                + seq
                + " is at lines "
                + (lineNo - 1)
                + " and "
                + lineNo,
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
        long later = findLater(events, r.position(), missing, lineNo);
        if (later > 0) {
          return VerifyReport.bad(
              at
                  + ": records reordered: expected seq "
                  + missing
                  + " here, it comes later at line "
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
      checked++;
    }
    return VerifyReport.good(checked, prevHash);
  }

  /** Line number (after {@code lineNo}) of the record with {@code seq}, or -1. */
  private static long findLater(Path events, long offset, long seq, long lineNo)
      throws IOException {
    try (JsonlReader r = new JsonlReader(events, offset)) {
      long n = lineNo;
      String line;
      while ((line = r.next()) != null) {
        n++;
        if (JsonlReader.quickSeq(line) == seq) {
          return n;
        }
      }
    }
    return -1;
  }
}
