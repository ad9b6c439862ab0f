package io.agentnest.server.tenancy;

import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * What a tenant's API key may do. Keys stored before roles existed have none and are {@link #AGENT}
 * keys: they keep doing what they did.
 */
public enum KeyRole {
  /** Everything the tenant may do: make sandboxes, run code, move files, answer approvals. */
  AGENT,

  /**
   * Lists and answers the tenant's approval questions, and reads what a person needs to judge them
   * (the tenant's sandboxes and their audit records); makes, runs and reads nothing else. When the
   * tenant's or the server's approvals require an approver ({@code policy.approver_role_required},
   * {@code agentnest tenant set NAME --approver-role-required true}), only these keys (and the
   * admin console) answer: the agent that holds the tenant's agent key cannot approve its own
   * sandbox's questions.
   */
  APPROVER;

  /** The name stored and shown: {@code agent} or {@code approver}. */
  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** The role named {@code text} (a stored value, a CLI option); null reads as {@link #AGENT}. */
  public static KeyRole parse(@Nullable String text) {
    if (text == null) {
      return AGENT;
    }
    for (KeyRole r : values()) {
      if (r.label().equals(text.strip().toLowerCase(Locale.ROOT))) {
        return r;
      }
    }
    throw new IllegalArgumentException(
        "key role '" + text + "' is not agent or approver: e.g. --role approver");
  }
}
