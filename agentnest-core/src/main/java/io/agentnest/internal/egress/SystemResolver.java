package io.agentnest.internal.egress;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;

/** The JVM's resolver ({@link InetAddress#getAllByName}): the operating system's DNS setup. */
public final class SystemResolver implements Resolver {
  public static final SystemResolver INSTANCE = new SystemResolver();

  private SystemResolver() {}

  @Override
  public List<InetAddress> resolve(String host) throws UnknownHostException {
    List<InetAddress> all = List.of(InetAddress.getAllByName(host));
    if (all.isEmpty()) {
      throw new UnknownHostException(host + ": no addresses");
    }
    return all;
  }
}
