package io.agentnest.docker;

import java.nio.file.Path;

/**
 * Points {@code agentnest.home} at a test's own directory until closed, then back to what it was:
 * the host state a test writes (sandbox records, snapshots, keys) stays out of the user's home and
 * out of other tests'.
 *
 * @param previous the value before, or null where it was not set
 */
record TestHome(String previous) implements AutoCloseable {
  static final String PROPERTY = "agentnest.home";

  static TestHome use(Path home) {
    TestHome back = new TestHome(System.getProperty(PROPERTY));
    System.setProperty(PROPERTY, home.toString());
    return back;
  }

  @Override
  public void close() {
    if (previous == null) {
      System.clearProperty(PROPERTY);
    } else {
      System.setProperty(PROPERTY, previous);
    }
  }
}
