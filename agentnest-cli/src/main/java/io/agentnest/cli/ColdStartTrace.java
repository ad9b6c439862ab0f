package io.agentnest.cli;

import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.spi.support.StartTrace;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import me.tongfei.progressbar.ProgressBar;

/**
 * {@code bench --only cold-start --trace}: cold starts again, each traced step by step ({@link
 * StartTrace}): the launcher's and the backend's steps, then the first result and the destroy. One
 * row per step, in the order the steps happen.
 */
final class ColdStartTrace {
  private ColdStartTrace() {}

  static Map<String, double[]> run(SandboxConfig config, int iterations) {
    Map<String, List<Double>> steps = new LinkedHashMap<>();
    try (ProgressBar pb = Progress.bar("cold-start --trace", iterations)) {
      for (int i = 0; i < iterations; i++) {
        StartTrace t = StartTrace.begin();
        try {
          try (Sandbox sb = Sandbox.create(config)) {
            StartTrace.mark("(create returned)");
            BenchCommand.check(sb.runCode("1 + 1"), "2");
            StartTrace.mark("first result");
          }
          StartTrace.mark("destroy");
        } finally {
          for (StartTrace.Step s : t.end()) {
            steps.computeIfAbsent(s.name(), k -> new ArrayList<>()).add(s.millis());
          }
        }
        pb.step();
      }
    }
    Map<String, double[]> out = new LinkedHashMap<>();
    steps.forEach(
        (name, ms) ->
            out.put("cold-start: " + name, ms.stream().mapToDouble(Double::doubleValue).toArray()));
    return out;
  }
}
