package io.agentnest.internal.egress;

import io.agentnest.IpAddresses;
import io.agentnest.IpAddresses.Range;
import java.net.InetAddress;
import java.util.List;
import java.util.Optional;

/**
 * Classifies IP addresses for the egress proxy: only {@link Category#PUBLIC} addresses may be
 * reached unless the policy's {@code allowAddress} covers them. The address syntax (literals,
 * ranges) is the policy's own, {@link IpAddresses}.
 *
 * <p>IPv6 forms that embed an IPv4 address (IPv4-mapped {@code ::ffff:a.b.c.d}, IPv4-compatible
 * {@code ::a.b.c.d}, IPv4-translated {@code ::ffff:0:a.b.c.d}, NAT64 {@code 64:ff9b::/96}, 6to4
 * {@code 2002::/16}) are classified by the embedded address, so {@code ::ffff:127.0.0.1} is
 * loopback and {@code 64:ff9b::a9fe:a9fe} is the link-local metadata address.
 */
public final class AddressRules {
  /** What kind of address it is; everything but {@link #PUBLIC} is refused by default. */
  public enum Category {
    PUBLIC("a public address"),
    LOOPBACK("a loopback address"),
    LINK_LOCAL("a link-local address (this includes the cloud metadata address 169.254.169.254)"),
    PRIVATE("a private-network address"),
    MULTICAST("a multicast address"),
    UNSPECIFIED("the unspecified address"),
    BROADCAST("the broadcast address"),
    THIS_NETWORK("a 'this network' address (0.0.0.0/8)"),
    PROTOCOL_ASSIGNMENT("an IETF protocol assignment address"),
    BENCHMARKING("a benchmarking address (198.18.0.0/15, 2001:2::/48)"),
    DOCUMENTATION("a documentation address"),
    RESERVED("a reserved address");

    private final String description;

    Category(String description) {
      this.description = description;
    }

    /** For messages, e.g. "a loopback address". */
    public String description() {
      return description;
    }
  }

  private static final List<Block> V4 =
      List.of(
          new Block("255.255.255.255/32", Category.BROADCAST),
          new Block("0.0.0.0/32", Category.UNSPECIFIED),
          new Block("0.0.0.0/8", Category.THIS_NETWORK),
          new Block("10.0.0.0/8", Category.PRIVATE),
          new Block("100.64.0.0/10", Category.PRIVATE),
          new Block("127.0.0.0/8", Category.LOOPBACK),
          new Block("169.254.0.0/16", Category.LINK_LOCAL),
          new Block("172.16.0.0/12", Category.PRIVATE),
          new Block("192.0.0.0/24", Category.PROTOCOL_ASSIGNMENT),
          new Block("192.0.2.0/24", Category.DOCUMENTATION),
          new Block("192.88.99.0/24", Category.RESERVED),
          new Block("192.168.0.0/16", Category.PRIVATE),
          new Block("198.18.0.0/15", Category.BENCHMARKING),
          new Block("198.51.100.0/24", Category.DOCUMENTATION),
          new Block("203.0.113.0/24", Category.DOCUMENTATION),
          new Block("224.0.0.0/4", Category.MULTICAST),
          new Block("240.0.0.0/4", Category.RESERVED));

  private static final List<Block> V6 =
      List.of(
          new Block("::/128", Category.UNSPECIFIED),
          new Block("::1/128", Category.LOOPBACK),
          new Block("64:ff9b:1::/48", Category.PRIVATE),
          new Block("100::/64", Category.RESERVED),
          new Block("2001:2::/48", Category.BENCHMARKING),
          new Block("2001::/23", Category.PROTOCOL_ASSIGNMENT),
          new Block("2001:db8::/32", Category.DOCUMENTATION),
          new Block("3fff::/20", Category.DOCUMENTATION),
          new Block("fc00::/7", Category.PRIVATE),
          new Block("fe80::/10", Category.LINK_LOCAL),
          new Block("fec0::/10", Category.PRIVATE),
          new Block("ff00::/8", Category.MULTICAST));

  private static final Range V4_COMPATIBLE = Range.parse("::/96");

  private AddressRules() {}

  /** A range and what its addresses are. */
  private record Block(Range range, Category category) {
    Block(String range, Category category) {
      this(Range.parse(range), category);
    }
  }

  /** The category of an address; IPv6 forms embedding an IPv4 address take its category. */
  public static Category classify(InetAddress address) {
    byte[] bytes = address.getAddress();
    if (bytes.length == 4) {
      return classifyV4(address);
    }
    for (Block b : V6) {
      if (b.range().containsExactly(address)) {
        return b.category();
      }
    }
    Optional<InetAddress> embedded = IpAddresses.embeddedIpv4(address);
    if (embedded.isPresent()) {
      Category inner = classifyV4(embedded.get());
      if (inner == Category.PUBLIC && V4_COMPATIBLE.containsExactly(address)) {
        return Category.RESERVED; // deprecated form (RFC 4291): never routed publicly
      }
      return inner;
    }
    if ((bytes[0] & 0xe0) != 0x20) {
      return Category.RESERVED; // outside 2000::/3, the global unicast space
    }
    return Category.PUBLIC;
  }

  /** Whether the address is a public (globally routed unicast) address. */
  public static boolean isPublic(InetAddress address) {
    return classify(address) == Category.PUBLIC;
  }

  private static Category classifyV4(InetAddress address) {
    for (Block b : V4) {
      if (b.range().containsExactly(address)) {
        return b.category();
      }
    }
    return Category.PUBLIC;
  }
}
