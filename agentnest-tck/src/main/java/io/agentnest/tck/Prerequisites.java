package io.agentnest.tck;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * What a backend's integration tests do when something they need (an engine, a cluster, a runtime,
 * a tool) is missing: outside CI they skip with a visible reason; under {@code CI=true} they fail,
 * so CI can never pass without having run them.
 */
public final class Prerequisites {
  private Prerequisites() {}

  /**
   * Fails under {@code CI=true}, skips visibly otherwise.
   *
   * @param what what is missing, e.g. "the Docker engine"
   * @param problem why it is not usable and how to fix it
   */
  public static void missing(String what, String problem) {
    missing(what, problem, "true".equalsIgnoreCase(System.getenv("CI")));
  }

  static void missing(String what, String problem, boolean ci) {
    if (ci) {
      throw new IllegalStateException("CI=true and " + what + " is not usable: " + problem);
    }
    assumeTrue(false, "SKIPPED (no " + what + "): " + problem);
  }
}
