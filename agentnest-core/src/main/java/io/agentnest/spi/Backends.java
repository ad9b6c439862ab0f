package io.agentnest.spi;

import io.agentnest.ConfigException;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Finds {@link RuntimeBackend}s with {@link ServiceLoader}, one instance per name per JVM. Tools
 * that manage sandboxes directly (the CLI's {@code doctor}, {@code prune}, {@code rm}) use it; an
 * unknown name is a {@link ConfigException} listing the backends on the class path.
 */
public final class Backends {
  private static final Map<String, RuntimeBackend> CACHE = new ConcurrentHashMap<>();

  private Backends() {}

  /** The backend called {@code name} (e.g. {@code docker}). */
  public static RuntimeBackend get(String name) {
    RuntimeBackend cached = CACHE.get(name);
    if (cached != null) {
      return cached;
    }
    synchronized (CACHE) {
      Map<String, RuntimeBackend> found = available();
      RuntimeBackend b = found.get(name);
      if (b == null) {
        throw new ConfigException(
            "backend '"
                + name
                + "' is not available: found "
                + found.keySet()
                + "; add its module (e.g. agentnest-docker) to the classpath");
      }
      CACHE.putIfAbsent(name, b);
      return CACHE.get(name);
    }
  }

  /** All backends on the classpath, by name. */
  public static Map<String, RuntimeBackend> available() {
    Map<String, RuntimeBackend> out = new TreeMap<>();
    for (RuntimeBackend b : ServiceLoader.load(RuntimeBackend.class)) {
      out.putIfAbsent(b.name(), b);
    }
    return out;
  }
}
