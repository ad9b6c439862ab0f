package io.agentnest;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * Per-call options: timeout, output cap, working directory, extra environment, stdin and a live
 * output listener.
 *
 * <pre>{@code
 * sandbox.exec("make test", ExecOptions.builder()
 *     .timeout(Duration.ofMinutes(2))
 *     .workdir("project")
 *     .env("CI", "1")
 *     .onOutput(chunk -> System.out.print(chunk.text()))
 *     .build());
 * }</pre>
 */
public final class ExecOptions {
  private static final ExecOptions DEFAULTS = builder().build();

  private final @Nullable Duration timeout;
  private final @Nullable Long maxOutputBytes;
  private final @Nullable String workdir;
  private final Map<String, String> env;
  private final byte[] stdin;
  private final @Nullable Consumer<OutputChunk> onOutput;
  private final Backpressure backpressure;
  private final int streamBuffer;

  private ExecOptions(Builder b) {
    this.backpressure = b.backpressure;
    this.streamBuffer = b.streamBuffer;
    this.timeout = b.timeout;
    this.maxOutputBytes = b.maxOutputBytes;
    this.workdir = b.workdir;
    this.env = Map.copyOf(b.env);
    this.stdin = b.stdin.clone();
    this.onOutput = b.onOutput;
  }

  /** Options with every value taken from the sandbox's configuration. */
  public static ExecOptions defaults() {
    return DEFAULTS;
  }

  public static Builder builder() {
    return new Builder();
  }

  public @Nullable Duration timeout() {
    return timeout;
  }

  public @Nullable Long maxOutputBytes() {
    return maxOutputBytes;
  }

  public @Nullable String workdir() {
    return workdir;
  }

  public Map<String, String> env() {
    return env;
  }

  public byte[] stdin() {
    return stdin.clone();
  }

  public @Nullable Consumer<OutputChunk> onOutput() {
    return onOutput;
  }

  /** What a streamed execution does with a slow consumer. */
  public Backpressure backpressure() {
    return backpressure;
  }

  /** Events a streamed execution buffers for its consumer. */
  public int streamBuffer() {
    return streamBuffer;
  }

  /** Builder; {@link #build()} validates. */
  public static final class Builder {
    private @Nullable Duration timeout;
    private @Nullable Long maxOutputBytes;
    private @Nullable String workdir;
    private final Map<String, String> env = new LinkedHashMap<>();
    private byte[] stdin = new byte[0];
    private @Nullable Consumer<OutputChunk> onOutput;
    private Backpressure backpressure = Backpressure.BLOCK;
    private int streamBuffer = 256;

    private Builder() {}

    /** Slow-consumer policy of streamed executions (default {@link Backpressure#BLOCK}). */
    public Builder backpressure(Backpressure policy) {
      this.backpressure = Objects.requireNonNull(policy, "policy");
      return this;
    }

    /** How many events a streamed execution buffers (default 256; chunks are at most 64 KiB). */
    public Builder streamBuffer(int events) {
      this.streamBuffer = events;
      return this;
    }

    /** Wall-time limit of this call; the process tree is stopped when it runs out. */
    public Builder timeout(Duration timeout) {
      this.timeout = timeout;
      return this;
    }

    /** Cap on stdout+stderr bytes of this call. */
    public Builder maxOutputBytes(long bytes) {
      this.maxOutputBytes = bytes;
      return this;
    }

    /** Working directory: relative to the workspace, or absolute inside the sandbox. */
    public Builder workdir(String workdir) {
      this.workdir = workdir;
      return this;
    }

    public Builder env(String name, String value) {
      env.put(name, value);
      return this;
    }

    public Builder env(Map<String, String> values) {
      env.putAll(values);
      return this;
    }

    /** Bytes fed to the command's standard input (shell commands only). */
    public Builder stdin(byte[] data) {
      this.stdin = data.clone();
      return this;
    }

    /** Receives output as it is produced, in order, on a channel thread: keep it quick. */
    public Builder onOutput(Consumer<OutputChunk> listener) {
      this.onOutput = listener;
      return this;
    }

    public ExecOptions build() {
      if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
        throw new ConfigException(
            "timeout must be positive, got " + timeout + ": pass e.g. Duration.ofSeconds(30)");
      }
      if (maxOutputBytes != null && maxOutputBytes < 0) {
        throw new ConfigException(
            "maxOutputBytes must be >= 0, got " + maxOutputBytes + ": pass e.g. 10_000_000");
      }
      if (streamBuffer < 1 || streamBuffer > 65536) {
        throw new ConfigException("streamBuffer must be in [1, 65536] events, got " + streamBuffer);
      }
      for (String name : env.keySet()) {
        SandboxConfig.checkEnvName(name);
      }
      if (stdin.length > SandboxConfig.MAX_STDIN_BYTES) {
        throw new ConfigException(
            "stdin is "
                + stdin.length
                + " bytes, more than "
                + SandboxConfig.MAX_STDIN_BYTES
                + ": upload it with files().write() and redirect instead");
      }
      return new ExecOptions(this);
    }
  }
}
