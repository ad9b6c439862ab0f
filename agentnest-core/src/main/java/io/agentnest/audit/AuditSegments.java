package io.agentnest.audit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The files of one audit trail, in chain order: rotated files {@code events-000001.jsonl}, {@code
 * events-000002.jsonl}, ... (numbered from 1, in the order they were written), then the active
 * {@code events.jsonl}, which would become the next number. The chain runs through them as through
 * one file: the first record of each file links to the last record of the one before.
 *
 * <p>A record's place is one long, {@link #position}: the file's number in the high bits and the
 * byte offset within it in the low {@value #OFFSET_BITS}, so that the index needs no second column.
 */
final class AuditSegments {
  static final int OFFSET_BITS = 40;
  private static final long OFFSET_MASK = (1L << OFFSET_BITS) - 1;
  private static final Pattern ROTATED = Pattern.compile("events-([0-9]{6,12})\\.jsonl");

  private AuditSegments() {}

  /** One file of the trail. */
  record Segment(Path path, long number, boolean active) {
    String name() {
      return path.getFileName().toString();
    }
  }

  static String rotatedName(long number) {
    return String.format(Locale.ROOT, "events-%06d.jsonl", number);
  }

  static long position(long number, long offset) {
    if (offset < 0 || offset > OFFSET_MASK) {
      throw new IllegalArgumentException("offset " + offset + " out of range");
    }
    return (number << OFFSET_BITS) | offset;
  }

  static long number(long position) {
    return position >>> OFFSET_BITS;
  }

  static long offset(long position) {
    return position & OFFSET_MASK;
  }

  /** The rotated files, oldest first (numbers as found: gaps are the verifier's business). */
  static List<Segment> rotated(Path dir) {
    List<Segment> out = new ArrayList<>();
    if (!Files.isDirectory(dir)) {
      return out;
    }
    try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir, "events-*.jsonl")) {
      for (Path p : ds) {
        Matcher m = ROTATED.matcher(p.getFileName().toString());
        if (m.matches() && Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
          out.add(new Segment(p, Long.parseLong(m.group(1)), false));
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list the audit files in " + dir, e);
    }
    out.sort(Comparator.comparingLong(Segment::number));
    return out;
  }

  /** The number the active file gets when it is rotated: one more than the last rotated one. */
  static long activeNumber(List<Segment> rotated) {
    return rotated.isEmpty() ? 1 : rotated.get(rotated.size() - 1).number() + 1;
  }

  /** Every file of the trail in chain order; the active one last when it exists. */
  static List<Segment> all(Path dir) {
    List<Segment> out = rotated(dir);
    long active = activeNumber(out);
    Path events = dir.resolve(AuditLog.EVENTS_FILE);
    if (Files.exists(events)) {
      out.add(new Segment(events, active, true));
    }
    return out;
  }

  /** The identity of the file at {@code path} (device and inode), to notice a rename. */
  static @Nullable Object fileKey(Path path) {
    try {
      return Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS)
          .fileKey();
    } catch (IOException e) {
      return null;
    }
  }

  static boolean sameFile(@Nullable Object a, @Nullable Object b) {
    return a != null && Objects.equals(a, b);
  }
}
