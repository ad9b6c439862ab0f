package io.agentnest.escapes.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.MissingNode;

/**
 * A probe's own account of its attack.
 *
 * @param through whether the attack got what it wanted
 * @param detail what it saw
 * @param data extra facts for the host to judge (environment, mounts); missing when none
 */
public record Judgement(boolean through, String detail, JsonNode data) {
  public static Judgement of(boolean through, String detail) {
    return new Judgement(through, detail, MissingNode.getInstance());
  }

  /** The same judgement with another detail. */
  public Judgement withDetail(String d) {
    return new Judgement(through, d, data);
  }

  /** This judgement, also through when {@code more} is (details joined). */
  public Judgement or(boolean more, String why) {
    return new Judgement(through || more, more ? why + "; " + detail : detail, data);
  }
}
