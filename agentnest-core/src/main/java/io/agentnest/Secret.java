package io.agentnest;

import java.util.Objects;

/**
 * A secret value: passed into the sandbox (e.g. as an environment variable) but masked in
 * everything that comes out of it (output, results, tracebacks, file reads, errors), also when
 * split across chunks or printed as base64, hex or URL-encoded.
 *
 * <pre>{@code
 * SandboxConfig.builder().secretEnv("OPENAI_API_KEY", Secret.of(System.getenv("OPENAI_API_KEY")))
 * }</pre>
 *
 * <p>{@link #toString()} never shows the value.
 */
public final class Secret {
  /** Shorter values would mask ordinary text; they are refused. */
  public static final int MIN_LENGTH = 4;

  private final String value;

  private Secret(String value) {
    this.value = value;
  }

  public static Secret of(String value) {
    Objects.requireNonNull(value, "value");
    if (value.length() < MIN_LENGTH) {
      throw new ConfigException(
          "a secret must have at least "
              + MIN_LENGTH
              + " characters to be redacted reliably (got "
              + value.length()
              + ")");
    }
    if (value.indexOf('\0') >= 0 || value.indexOf('\n') >= 0) {
      throw new ConfigException("a secret must not contain NUL or newline characters");
    }
    return new Secret(value);
  }

  /** The value, for passing it into the sandbox. */
  public String reveal() {
    return value;
  }

  @Override
  public String toString() {
    return "Secret[****]";
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Secret s && s.value.equals(value);
  }

  @Override
  public int hashCode() {
    return value.hashCode();
  }
}
