package io.agentnest.escapes.internal;

import static io.agentnest.escapes.internal.Judges.sleep;

import io.agentnest.NetworkEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Network: the metadata service, the host, other sandboxes, raw sockets, IPv6 and DNS exfiltration.
 */
final class NetworkProbes {
  private NetworkProbes() {}

  static void addTo(ProbeList p) {
    p.script(
        "network.metadata-service",
        "reach the cloud metadata service (169.254.169.254), directly or through the proxy");
    p.add(
        "network.host-loopback",
        "reach a service on the host's loopback, directly or through the proxy (all spellings"
            + " of 127.0.0.1)",
        Map.of(),
        ctx -> {
          int before = ctx.listener.accepted();
          Judgement j =
              ctx.script(
                  "network.host-loopback",
                  Map.of("host_port", ctx.listener.port(), "banner", HostListener.BANNER));
          int after = ctx.listener.accepted();
          return j.or(
              after > before, "the host listener accepted " + (after - before) + " connections");
        });
    p.script(
        "network.docker-gateway", "reach the docker0 gateway (the host) or host.docker.internal");
    p.add(
        "network.other-sandboxes",
        "reach another sandbox: its abstract unix socket, its /tmp, or its address",
        Map.of(),
        ctx ->
            ctx.script(
                "network.other-sandboxes",
                Map.of("abstract", ctx.abstractName, "tmp_file", ctx.neighbourFile)));
    p.script("network.raw-sockets", "send raw IP/ICMP packets");
    p.script(
        "network.packet-sockets",
        "open AF_PACKET, netlink, vsock or AF_ALG sockets",
        ProbeList.onGvisor(
            "gVisor's netlink route sockets are served by the Sentry's own network stack, which"
                + " has no host interface with --network=none (with runsc's --oci-seccomp the"
                + " profile refuses them first)"));
    p.script(
        "network.compat-sockets",
        "open AF_VSOCK (a route to the hypervisor, not namespaced), AF_NETLINK or AF_PACKET"
            + " sockets through int 0x80 (socketcall and socket) and the x32 ABI");
    p.script(
        "network.ipv6",
        "reach anything over IPv6 (global, link-local, v4-mapped), directly or through the proxy");
    p.add(
        "network.dns-exfiltration",
        "leak data in DNS names: resolve a name, send queries to any resolver, or make the proxy"
            + " resolve it",
        Map.of(),
        NetworkProbes::dnsExfiltration);
  }

  private static Judgement dnsExfiltration(ProbeContext ctx) {
    String label = "x" + Long.toHexString(System.nanoTime());
    int before = ctx.events.size();
    Judgement j = ctx.script("network.dns-exfiltration", Map.of("label", label));
    List<NetworkEvent> seen = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      seen =
          ctx.events.subList(before, ctx.events.size()).stream()
              .filter(e -> e.host().contains(label))
              .toList();
      if (!seen.isEmpty()) {
        break;
      }
      sleep(100);
    }
    boolean resolved =
        seen.stream()
            .anyMatch(
                e -> e.resolvedAddress() != null || e.decision() != NetworkEvent.Decision.DENIED);
    return j.or(resolved, "the proxy resolved or allowed the exfiltration name")
        .or(seen.isEmpty(), "the proxy reported no attempt for the exfiltration name")
        .withDetail(
            j.detail()
                + "; proxy: "
                + (seen.isEmpty()
                    ? "no event"
                    : seen.get(0).decision() + " " + seen.get(0).rule() + ", not resolved"));
  }
}
