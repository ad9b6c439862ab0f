package io.agentnest;

import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * The sandbox's whole-number limits, each with one name that every encoding uses: the key under
 * {@code limits:} in {@code agentnest.yaml} ({@code limits.open_files}), its environment variable
 * ({@code AGENTNEST_LIMITS_OPEN_FILES}), the CLI's {@code --limit open_files=4096}, the {@code /v1}
 * create request's {@code "limits": {"open_files": 4096}}, the Python client's {@code
 * limits={"open_files": 4096}}, and the saved state of a snapshot. A new limit is a constant here
 * plus its enforcement ({@code spi.SandboxSpec} and the backends); the encodings read this table.
 *
 * <p>The limits that predate the table keep the names they had in the older encodings as aliases
 * ({@link #wireAlias()}, {@link #savedAlias()}), so old requests, snapshots and code still work.
 */
public enum SandboxLimit {
  /** Processes and threads together (cgroup pids.max, or RLIMIT_NPROC where the kernel is own). */
  PIDS("pids", Unit.COUNT, 256, 8, Long.MAX_VALUE, "pidsLimit", "pids_limit", "pidsLimit"),
  /** Open file descriptors per process (RLIMIT_NOFILE, soft and hard). */
  OPEN_FILES("open_files", Unit.COUNT, 4096, 64, 1L << 20, null, null, null),
  /** Size of the memory-backed {@code /tmp}; it counts towards the memory limit. */
  TMP_SIZE(
      "tmp_size",
      Unit.BYTES,
      64L << 20,
      1L << 20,
      Long.MAX_VALUE,
      "tmpSizeBytes",
      "tmp_bytes",
      "tmpSize"),
  /** Size of the memory-backed {@code /workspace}; it counts towards the memory limit. */
  WORKSPACE_SIZE(
      "workspace_size",
      Unit.BYTES,
      256L << 20,
      1L << 20,
      Long.MAX_VALUE,
      "workspaceSizeBytes",
      "workspace_bytes",
      "workspaceSize");

  /** How a limit's value is written by people: a count, or a size such as {@code 64m}. */
  public enum Unit {
    COUNT,
    BYTES
  }

  private final String key;
  private final Unit unit;
  private final long byDefault;
  private final long least;
  private final long most;
  private final @Nullable String wireAlias;
  private final @Nullable String savedAlias;
  private final @Nullable String javaName;

  SandboxLimit(
      String key,
      Unit unit,
      long byDefault,
      long least,
      long most,
      @Nullable String wireAlias,
      @Nullable String savedAlias,
      @Nullable String javaName) {
    this.key = key;
    this.unit = unit;
    this.byDefault = byDefault;
    this.least = least;
    this.most = most;
    this.wireAlias = wireAlias;
    this.savedAlias = savedAlias;
    this.javaName = javaName;
  }

  /** The one name: {@code open_files}. */
  public String key() {
    return key;
  }

  public Unit unit() {
    return unit;
  }

  /** The value a sandbox gets when nothing sets this limit. */
  public long byDefault() {
    return byDefault;
  }

  public long least() {
    return least;
  }

  public long most() {
    return most;
  }

  /**
   * The top-level field of the {@code /v1} create request that carried this limit before the {@code
   * limits} object ({@code pidsLimit}); empty for limits added since.
   */
  public Optional<String> wireAlias() {
    return Optional.ofNullable(wireAlias);
  }

  /**
   * The key a snapshot's saved config used for this limit before the table ({@code pids_limit}).
   */
  public Optional<String> savedAlias() {
    return Optional.ofNullable(savedAlias);
  }

  /** The limit named {@code key} ({@code open_files}), if there is one. */
  public static Optional<SandboxLimit> named(String key) {
    for (SandboxLimit l : values()) {
      if (l.key.equals(key)) {
        return Optional.of(l);
      }
    }
    return Optional.empty();
  }

  /**
   * The limit named {@code key}.
   *
   * @throws ConfigException naming the known limits when there is none of that name
   */
  public static SandboxLimit require(String key) {
    return named(key)
        .orElseThrow(
            () ->
                new ConfigException(
                    "unknown limit '"
                        + key
                        + "': use one of "
                        + keys()
                        + ", e.g. open_files=4096 or tmp_size=64m"));
  }

  /** The names of every limit, comma-separated, for messages. */
  public static String keys() {
    return Arrays.stream(values()).map(SandboxLimit::key).collect(Collectors.joining(", "));
  }

  /**
   * Writes {@code values} as an encoding that has older spellings does: a limit with an {@code
   * alias} in that encoding goes to {@code older} under it (every reader knows it); a later one
   * goes to {@code later} by its key, and only when not at its default, so what uses none of the
   * later limits reads as it did before they existed.
   */
  public static void encode(
      Map<SandboxLimit, Long> values,
      Function<SandboxLimit, Optional<String>> alias,
      BiConsumer<String, Long> older,
      BiConsumer<String, Long> later) {
    values.forEach(
        (l, v) -> {
          Optional<String> a = alias.apply(l);
          if (a.isPresent()) {
            older.accept(a.get(), v);
          } else if (v != l.byDefault) {
            later.accept(l.key, v);
          }
        });
  }

  /** Every limit at its default: what a builder starts from. */
  static EnumMap<SandboxLimit, Long> defaults() {
    EnumMap<SandboxLimit, Long> m = new EnumMap<>(SandboxLimit.class);
    for (SandboxLimit l : values()) {
      m.put(l, l.byDefault);
    }
    return m;
  }

  static Map<SandboxLimit, Long> frozen(EnumMap<SandboxLimit, Long> m) {
    return Collections.unmodifiableMap(new EnumMap<>(m));
  }

  /**
   * Reads a value as people write it: a whole number, or for a size also {@code 64m}, {@code 1g}.
   *
   * @throws ConfigException naming the limit and the form it takes
   */
  public long parse(String text) {
    if (unit == Unit.BYTES) {
      return Sizes.parse("limits." + key, text);
    }
    try {
      return Long.parseLong(text.strip());
    } catch (NumberFormatException e) {
      throw new ConfigException(
          "limits." + key + " '" + text + "' is not a whole number: e.g. " + format(byDefault));
    }
  }

  /** Writes a value as {@link #parse} reads it back. */
  public String format(long value) {
    return unit == Unit.BYTES ? Sizes.format(value) : Long.toString(value);
  }

  /**
   * Checks {@code value} against this limit's range.
   *
   * @throws ConfigException naming the limit, the range and the value
   */
  void check(long value) {
    String name = javaName != null ? javaName : "limits." + key;
    if (value < least) {
      String at = unit == Unit.BYTES ? format(least) + " (" + least + " bytes)" : format(least);
      String why = this == PIDS ? " (the agent needs a few)" : "";
      throw new ConfigException(
          name + " must be at least " + at + why + ", got " + value + hint(name));
    }
    if (value > most) {
      throw new ConfigException(
          name + " must be at most " + format(most) + ", got " + value + hint(name));
    }
  }

  private String hint(String name) {
    // The older names' messages stay as they were; the table's own say where to set the value.
    return name.equals(javaName)
        ? ""
        : ": set e.g. limits."
            + key
            + ": "
            + format(byDefault)
            + " (agentnest.yaml) or --limit "
            + key
            + "="
            + format(byDefault);
  }
}
