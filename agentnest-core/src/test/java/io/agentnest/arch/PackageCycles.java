package io.agentnest.arch;

import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Package circles among the classes of a base package, from their byte code (what javac inlines,
 * such as constants, is not seen): each circle is the sorted names of its packages, relative to the
 * base package ({@code (api)} for the base package itself).
 */
public final class PackageCycles {
  private PackageCycles() {}

  public static List<String> of(JavaClasses classes, String basePackage) {
    Map<String, Set<String>> graph = new TreeMap<>();
    for (JavaClass c : classes) {
      String from = c.getPackageName();
      if (!from.startsWith(basePackage)) {
        continue;
      }
      graph.computeIfAbsent(from, k -> new TreeSet<>());
      for (Dependency d : c.getDirectDependenciesFromSelf()) {
        String to = d.getTargetClass().getPackageName();
        if (to.startsWith(basePackage) && !to.equals(from)) {
          graph.get(from).add(to);
        }
      }
    }
    return cycles(graph, basePackage);
  }

  /** The strongly connected components of more than one package, each sorted, as lines. */
  static List<String> cycles(Map<String, Set<String>> graph, String basePackage) {
    Map<String, Integer> index = new HashMap<>();
    Map<String, Integer> low = new HashMap<>();
    Deque<String> stack = new ArrayDeque<>();
    Set<String> onStack = new TreeSet<>();
    List<String> out = new ArrayList<>();
    int[] counter = {0};
    for (String v : graph.keySet()) {
      if (!index.containsKey(v)) {
        strongConnect(v, graph, index, low, stack, onStack, out, counter, basePackage);
      }
    }
    out.sort(String::compareTo);
    return out;
  }

  private static void strongConnect(
      String v,
      Map<String, Set<String>> graph,
      Map<String, Integer> index,
      Map<String, Integer> low,
      Deque<String> stack,
      Set<String> onStack,
      List<String> out,
      int[] counter,
      String base) {
    index.put(v, counter[0]);
    low.put(v, counter[0]);
    counter[0]++;
    stack.push(v);
    onStack.add(v);
    for (String w : graph.getOrDefault(v, Set.of())) {
      if (!index.containsKey(w)) {
        strongConnect(w, graph, index, low, stack, onStack, out, counter, base);
        low.put(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.contains(w)) {
        low.put(v, Math.min(low.get(v), index.get(w)));
      }
    }
    if (low.get(v).equals(index.get(v))) {
      Set<String> component = new TreeSet<>();
      String w;
      do {
        w = stack.pop();
        onStack.remove(w);
        component.add(w.equals(base) ? "(api)" : w.substring(base.length() + 1));
      } while (!w.equals(v));
      if (component.size() > 1) {
        out.add(String.join(" ", component));
      }
    }
  }
}
