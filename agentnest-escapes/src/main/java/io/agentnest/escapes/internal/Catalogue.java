package io.agentnest.escapes.internal;

import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Every probe: its description, the runtimes where getting through is harmless, and its body. A
 * small registry: each category of attack has a file of its own ({@code PrivilegeProbes}, ...,
 * {@code ResourceProbes}); the probes the sandbox runs come first, then those the host judges
 * itself. The order is stable (reports and the docs list probes in it).
 */
public final class Catalogue {
  /**
   * A probe's description (the suite's public {@code Probe} is made from it) and the code that runs
   * it.
   */
  public record Entry(
      String id,
      String attack,
      Map<String, String> harmlessOn,
      Function<ProbeContext, Judgement> body) {
    public Entry {
      harmlessOn = Map.copyOf(harmlessOn);
    }
  }

  private Catalogue() {}

  /** The whole catalogue, in a stable order. */
  public static List<Entry> all() {
    ProbeList p = new ProbeList();
    // run in the sandbox
    PrivilegeProbes.addTo(p);
    NamespaceProbes.addTo(p);
    DeviceProbes.addTo(p);
    KernelProbes.addTo(p);
    HostInfoProbes.addTo(p);
    NetworkProbes.addTo(p);
    // judged by the host
    FileProbes.addTo(p);
    SecretProbes.addTo(p);
    GitProbes.addTo(p);
    BrowserProbes.addTo(p);
    ResourceProbes.addTo(p);
    return p.entries();
  }
}
