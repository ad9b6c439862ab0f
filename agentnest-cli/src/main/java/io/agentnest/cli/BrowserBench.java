package io.agentnest.cli;

import io.agentnest.AgentNestException;
import io.agentnest.Browser;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import java.util.Map;
import me.tongfei.progressbar.ProgressBar;

/**
 * {@code bench --only browser}: from {@link Sandbox#browser()} to the PNG of a simple page (a
 * {@code data:} URL, so no network is involved), in a warm sandbox of the browser preset; the
 * browser is closed after each sample, outside the measured time.
 */
final class BrowserBench {
  static final String PAGE =
      "data:text/html,<html><body style='margin:0'><h1>AgentNest</h1>"
          + "<div style='width:200px;height:100px;background:red'></div></body></html>";

  private BrowserBench() {}

  static void run(SandboxConfig config, int iterations, int warmup, Map<String, double[]> samples) {
    SandboxConfig browser = SandboxConfig.preset("browser").backend(config.backend()).build();
    double[] start = new double[iterations];
    double[] shot = new double[iterations];
    try (Sandbox sb = Sandbox.create(browser);
        ProgressBar pb = Progress.bar("browser", warmup + iterations)) {
      for (int i = 0; i < warmup + iterations; i++) {
        long t0 = System.nanoTime();
        Browser b = sb.browser();
        long t1 = System.nanoTime();
        try {
          b.open(PAGE);
          if (b.screenshot().length < 100) {
            throw new AgentNestException("the browser returned no screenshot");
          }
        } finally {
          long t2 = System.nanoTime();
          if (i >= warmup) {
            start[i - warmup] = (t1 - t0) / 1e6;
            shot[i - warmup] = (t2 - t0) / 1e6;
          }
          b.close();
        }
        pb.step();
      }
    }
    samples.put("browser: browser() ready", start);
    samples.put("browser: browser() to screenshot", shot);
  }
}
