package io.agentnest;

import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import org.jspecify.annotations.Nullable;

/** Finds the one {@link SandboxRuntime} on the class path, once per JVM. */
final class SandboxRuntimes {
  private SandboxRuntimes() {}

  // Not a holder class: a failed class initialisation would hide this error behind a bare
  // NoClassDefFoundError on every later call. The runtime is stateless, so a racing double lookup
  // is harmless.
  private static volatile @Nullable SandboxRuntime runtime;

  static SandboxRuntime get() {
    SandboxRuntime r = runtime;
    if (r == null) {
      r = find(ServiceLoader.load(SandboxRuntime.class, SandboxRuntimes.class.getClassLoader()));
      runtime = r;
    }
    return r;
  }

  /** The single provider, or an error naming what is missing or doubled on the class path. */
  static SandboxRuntime find(Iterable<SandboxRuntime> providers) {
    List<SandboxRuntime> found = new ArrayList<>();
    providers.forEach(found::add);
    if (found.isEmpty()) {
      throw new IllegalStateException(
          "no io.agentnest.SandboxRuntime on the class path: put agentnest-core's jar (with its"
              + " META-INF/services) on the class path");
    }
    if (found.size() > 1) {
      throw new IllegalStateException(
          "more than one io.agentnest.SandboxRuntime on the class path ("
              + found.stream().map(r -> r.getClass().getName()).toList()
              + "): keep only agentnest-core's");
    }
    return found.get(0);
  }
}
