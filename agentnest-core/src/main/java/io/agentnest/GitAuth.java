package io.agentnest;

import java.util.Objects;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * How git authenticates to a remote ({@link Git#clone}). The secret stays on the host: the
 * sandbox's egress proxy adds it (HTTP basic authentication) to the requests to the remote's
 * scheme, host and port while one operation runs; nothing in the sandbox, git included, ever holds
 * it (see docs/git.md).
 *
 * <pre>{@code
 * GitAuth.token(Secret.fromEnv("GITHUB_TOKEN"))        // user x-access-token, the token as password
 * GitAuth.basic("alice", Secret.fromEnv("GIT_PASSWORD"))
 * }</pre>
 */
public final class GitAuth {
  /** The user name git is given with {@link #token(Secret)} (what GitHub expects with a token). */
  public static final String TOKEN_USER = "x-access-token";

  private static final GitAuth NONE = new GitAuth(null, null);

  private final @Nullable String user;
  private final @Nullable Secret secret;

  private GitAuth(@Nullable String user, @Nullable Secret secret) {
    this.user = user;
    this.secret = secret;
  }

  /** No credentials: a remote that asks for some fails at once (git never prompts). */
  public static GitAuth none() {
    return NONE;
  }

  /** A token as the password, with the user {@value #TOKEN_USER}. */
  public static GitAuth token(Secret token) {
    return new GitAuth(TOKEN_USER, Objects.requireNonNull(token, "token"));
  }

  /** A user name and a password (or token). */
  public static GitAuth basic(String user, Secret password) {
    Objects.requireNonNull(user, "user");
    if (user.isEmpty()
        || user.length() > 256
        || !user.chars().allMatch(c -> c > 0x20 && c != 0x7f)) {
      throw new ConfigException(
          "git user name '" + user + "' is invalid: use 1-256 printable characters without spaces");
    }
    return new GitAuth(user, Objects.requireNonNull(password, "password"));
  }

  /** Whether there are credentials at all. */
  public boolean isNone() {
    return secret == null;
  }

  /** The user name, when there are credentials. */
  public Optional<String> user() {
    return Optional.ofNullable(user);
  }

  /** The secret, when there are credentials. */
  public Optional<Secret> secret() {
    return Optional.ofNullable(secret);
  }

  @Override
  public String toString() {
    return isNone() ? "GitAuth[none]" : "GitAuth[user=" + user + ", secret=****]";
  }
}
