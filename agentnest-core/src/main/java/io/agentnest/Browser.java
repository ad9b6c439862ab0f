package io.agentnest;

import java.net.URI;
import java.time.Duration;

/**
 * A headless Chromium inside a sandbox ({@link Sandbox#browser()}), under the sandbox's hardening
 * and network policy: every page load goes through the host's egress proxy, so the allowlist and
 * the audit apply to it. Driven over the DevTools protocol through an {@link Sandbox#expose
 * exposed} port; {@link #devToolsUri()} hands that port to Playwright or Selenium on the host.
 */
public interface Browser extends AutoCloseable {
  /**
   * Loads {@code url} in the page and waits for its load event (at most {@code timeout}).
   *
   * @throws AgentNestException when the page cannot be loaded (refused by the allowlist: the
   *     proxy's answer; unreachable; timed out), with Chromium's reason
   */
  void open(String url, Duration timeout);

  /** {@link #open(String, Duration)} with 30 s. */
  default void open(String url) {
    open(url, Duration.ofSeconds(30));
  }

  /** A PNG of the page's viewport. */
  byte[] screenshot();

  /** The page's HTML as it is now (after scripts ran). */
  String html();

  /** The page's visible text ({@code document.body.innerText}). */
  String text();

  /** The DevTools HTTP endpoint on the host's loopback, e.g. for {@code connectOverCDP}. */
  URI devToolsUri();

  /** Ends Chromium and its exposed port; the sandbox stays. */
  @Override
  void close();
}
