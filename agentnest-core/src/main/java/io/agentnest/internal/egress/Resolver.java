package io.agentnest.internal.egress;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;

/** Resolves host names for the egress proxy; only ever called with validated DNS names. */
@FunctionalInterface
public interface Resolver {
  /**
   * All addresses of {@code host}, never empty.
   *
   * @throws UnknownHostException when the name does not resolve
   */
  List<InetAddress> resolve(String host) throws UnknownHostException;
}
