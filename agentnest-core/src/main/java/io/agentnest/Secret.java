package io.agentnest;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

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

  private static final Pattern ENV_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,127}");

  private final String value;
  private final @Nullable String name;

  private Secret(String value, @Nullable String name) {
    this.value = value;
    this.name = name;
  }

  /**
   * The value of the host's environment variable {@code name}; audit records that use it name it
   * {@code name} (never its value).
   *
   * @throws ConfigException when the variable is unset, empty or too short
   */
  public static Secret fromEnv(String name) {
    return fromEnv(name, System.getenv());
  }

  /**
   * The variable {@code name} of {@code environment} (the host's, or one a configuration loader was
   * given), as {@link #fromEnv(String)}.
   *
   * @throws ConfigException when the variable is unset, empty or too short
   */
  public static Secret fromEnv(String name, Map<String, String> environment) {
    Objects.requireNonNull(name, "name");
    if (!ENV_NAME.matcher(name).matches()) {
      throw new ConfigException(
          "'"
              + name
              + "' is not an environment variable name: use letters, digits and '_', not"
              + " starting with a digit");
    }
    String value = environment.get(name);
    if (value == null || value.isEmpty()) {
      throw new ConfigException(
          "the secret "
              + name
              + " is read from the host's environment variable "
              + name
              + ", which is not set: export "
              + name
              + "=... before starting AgentNest (a secret is never written in the configuration"
              + " file)");
    }
    return named(name, value);
  }

  /** A secret with a name for audit records ({@code GITHUB_TOKEN}); the value is never shown. */
  public static Secret named(String name, String value) {
    Objects.requireNonNull(name, "name");
    if (!ENV_NAME.matcher(name).matches()) {
      throw new ConfigException(
          "secret name '"
              + name
              + "' is invalid: use letters, digits and '_', not starting with a digit");
    }
    return new Secret(of(value).value, name);
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
    return new Secret(value, null);
  }

  /** The name audit records use for it, when it has one ({@link #fromEnv}, {@link #named}). */
  public Optional<String> name() {
    return Optional.ofNullable(name);
  }

  /** The value, for passing it into the sandbox. */
  public String reveal() {
    return value;
  }

  @Override
  public String toString() {
    return name == null ? "Secret[****]" : "Secret[" + name + "=****]";
  }

  @Override
  public boolean equals(@Nullable Object o) {
    return o instanceof Secret s && s.value.equals(value);
  }

  @Override
  public int hashCode() {
    return value.hashCode();
  }
}
