package io.agentnest.internal.egress;

import io.agentnest.IpAddresses;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** A fixed map of names to addresses, for tests and benchmarks; unknown names do not resolve. */
public final class StaticResolver implements Resolver {
  private final Map<String, List<InetAddress>> names;

  public StaticResolver(Map<String, List<InetAddress>> names) {
    Map<String, List<InetAddress>> copy = new LinkedHashMap<>();
    names.forEach(
        (name, addresses) -> {
          if (addresses.isEmpty()) {
            throw new IllegalArgumentException("no addresses for " + name);
          }
          copy.put(name.toLowerCase(Locale.ROOT), List.copyOf(addresses));
        });
    this.names = Map.copyOf(copy);
  }

  /** A resolver with one name mapped to IP literals, e.g. {@code of("a.test", "127.0.0.1")}. */
  public static StaticResolver of(String name, String... literals) {
    return new StaticResolver(Map.of()).with(name, literals);
  }

  /** This resolver plus (or with a replaced) {@code name} mapped to the given IP literals. */
  public StaticResolver with(String name, String... literals) {
    List<InetAddress> addresses = new ArrayList<>();
    for (String literal : literals) {
      addresses.add(
          IpAddresses.parseLiteral(literal)
              .orElseThrow(() -> new IllegalArgumentException("not an IP literal: " + literal)));
    }
    Map<String, List<InetAddress>> next = new LinkedHashMap<>(names);
    next.put(name, addresses);
    return new StaticResolver(next);
  }

  @Override
  public List<InetAddress> resolve(String host) throws UnknownHostException {
    List<InetAddress> addresses = names.get(host.toLowerCase(Locale.ROOT));
    if (addresses == null) {
      throw new UnknownHostException(host + ": not in the static resolver");
    }
    return addresses;
  }
}
