package io.agentnest.escapes;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.escapes.internal.ProbeJson;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** The outcomes of an escape-suite run, on one or more backends. */
public record EscapeReport(List<ProbeResult> results) {
  public EscapeReport {
    results = List.copyOf(results);
  }

  /** Both reports' results in one. */
  public EscapeReport plus(EscapeReport other) {
    List<ProbeResult> all = new ArrayList<>(results);
    all.addAll(other.results);
    return new EscapeReport(all);
  }

  /** Probes that got through or could not tell: anything here fails the build. */
  public List<ProbeResult> failures() {
    return results.stream().filter(r -> !r.outcome().safe()).toList();
  }

  /** Whether every probe was blocked or harmlessly contained. */
  public boolean passed() {
    return failures().isEmpty();
  }

  /** Count of results per outcome. */
  public Map<Outcome, Integer> counts() {
    Map<Outcome, Integer> m = new TreeMap<>();
    for (ProbeResult r : results) {
      m.merge(r.outcome(), 1, Integer::sum);
    }
    return m;
  }

  /** A fixed-width table: probe, backend, outcome, detail (cut to {@code detailWidth}). */
  public String table(int detailWidth) {
    int w = "probe".length();
    for (ProbeResult r : results) {
      w = Math.max(w, r.probe().length());
    }
    StringBuilder sb = new StringBuilder();
    String fmt = "%-" + w + "s  %-7s  %-9s  %s%n";
    sb.append(String.format(fmt, "probe", "backend", "outcome", "detail"));
    sb.append("-".repeat(w + 22 + Math.min(detailWidth, 40))).append('\n');
    for (ProbeResult r : results) {
      String d = r.detail();
      if (d.length() > detailWidth) {
        d = d.substring(0, Math.max(0, detailWidth - 3)) + "...";
      }
      sb.append(String.format(fmt, r.probe(), r.backend(), r.outcome(), d));
    }
    sb.append(
        String.format(
            "%d results: %s%s%n",
            results.size(),
            counts(),
            passed() ? "; nothing got through" : "; " + failures().size() + " FAILED"));
    return sb.toString();
  }

  /** The results as a JSON array of objects. */
  public String toJson() {
    ArrayNode arr = ProbeJson.MAPPER.createArrayNode();
    for (ProbeResult r : results) {
      ObjectNode o = arr.addObject();
      o.put("probe", r.probe());
      o.put("category", r.category());
      o.put("backend", r.backend());
      o.put("outcome", r.outcome().name());
      o.put("detail", r.detail());
      o.put("millis", r.took().toMillis());
    }
    return arr.toString();
  }
}
