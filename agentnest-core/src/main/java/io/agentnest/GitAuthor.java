package io.agentnest;

import java.util.Objects;

/**
 * Who a commit is by ({@link GitWorkspace#commit}): used as both author and committer.
 *
 * @param name 1-256 characters, no control characters and none of {@code <>}
 * @param email an address such as {@code bot@example.com}, no spaces and none of {@code <>}
 */
public record GitAuthor(String name, String email) {
  public GitAuthor {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(email, "email");
    if (name.isBlank()
        || name.length() > 256
        || !name.chars().allMatch(c -> c >= 0x20 && c != 0x7f && c != '<' && c != '>')) {
      throw new ConfigException(
          "git author name '"
              + name
              + "' is invalid: use 1-256 characters without control characters, '<' or '>'");
    }
    if (!email.matches("[^\\s<>@]{1,128}@[^\\s<>@]{1,253}")) {
      throw new ConfigException(
          "git author email '" + email + "' is invalid: use an address such as bot@example.com");
    }
  }
}
