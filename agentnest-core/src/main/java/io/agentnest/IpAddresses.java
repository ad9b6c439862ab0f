package io.agentnest;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The IP address syntax of {@link NetworkPolicy}: strict IP literals (never a DNS lookup), names
 * that merely look like addresses (refused as host rules, never resolved), CIDR ranges ({@link
 * Range}, what {@code allowAddress} takes) and the canonical text of an address. The egress proxy
 * applies the same rules, so a policy means the same on both sides.
 *
 * <p>IPv6 forms that embed an IPv4 address (IPv4-mapped {@code ::ffff:a.b.c.d}, IPv4-compatible
 * {@code ::a.b.c.d}, IPv4-translated {@code ::ffff:0:a.b.c.d}, NAT64 {@code 64:ff9b::/96}, 6to4
 * {@code 2002::/16}) are also in an IPv4 range when the embedded address is, so {@code
 * ::ffff:127.0.0.1} is in {@code 127.0.0.0/8}.
 */
public final class IpAddresses {
  /** An address range in CIDR notation; a single address is a range of its full length. */
  public static final class Range {
    private final byte[] network;
    private final int prefix;
    private final String text;

    private Range(byte[] network, int prefix) {
      this.network = network;
      this.prefix = prefix;
      this.text = toText(network, prefix);
    }

    /**
     * Parses {@code 10.0.0.0/8}, {@code fc00::/7}, {@code 127.0.0.1} or {@code ::1}.
     *
     * @throws IllegalArgumentException with the reason, when the text is not a valid range
     */
    public static Range parse(String text) {
      String s = text;
      int slash = s.indexOf('/');
      String addressPart = slash < 0 ? s : s.substring(0, slash);
      InetAddress address =
          parseLiteral(addressPart)
              .orElseThrow(
                  () ->
                      new IllegalArgumentException(
                          "'"
                              + addressPart
                              + "' is not an IP address (use dotted-quad IPv4 such as"
                              + " 127.0.0.1 or IPv6 such as fd00::1)"));
      byte[] bytes = address.getAddress();
      int bits = bytes.length * 8;
      int prefix = bits;
      if (slash >= 0) {
        String p = s.substring(slash + 1);
        if (!p.matches("[0-9]{1,3}") || Integer.parseInt(p) > bits) {
          throw new IllegalArgumentException(
              "prefix length '/" + p + "' is invalid: use a number from 0 to " + bits);
        }
        prefix = Integer.parseInt(p);
      }
      byte[] masked = mask(bytes, prefix);
      if (!Arrays.equals(masked, bytes)) {
        throw new IllegalArgumentException(
            "'"
                + text
                + "' has host bits set beyond the prefix: did you mean "
                + toText(masked, prefix)
                + "?");
      }
      return new Range(masked, prefix);
    }

    /**
     * Whether the address is in this range. An IPv6 address that embeds an IPv4 address (mapped,
     * compatible, translated, NAT64, 6to4) is also in an IPv4 range when the embedded address is.
     */
    public boolean contains(InetAddress address) {
      if (containsExactly(address.getAddress())) {
        return true;
      }
      byte[] embedded = embeddedIpv4(address.getAddress());
      return embedded != null && containsExactly(embedded);
    }

    /** Whether the address is in this range, not looking at an IPv4 address it embeds. */
    public boolean containsExactly(InetAddress address) {
      return containsExactly(address.getAddress());
    }

    private boolean containsExactly(byte[] bytes) {
      return bytes.length == network.length && Arrays.equals(mask(bytes, prefix), network);
    }

    public int prefixLength() {
      return prefix;
    }

    /** Canonical text, e.g. {@code 10.0.0.0/8}, or {@code 127.0.0.1} for a single address. */
    @Override
    public String toString() {
      return text;
    }

    @Override
    public boolean equals(@Nullable Object o) {
      return o instanceof Range r && r.text.equals(text);
    }

    @Override
    public int hashCode() {
      return text.hashCode();
    }

    private static String toText(byte[] network, int prefix) {
      String address = format(bytesToAddress(network));
      return prefix == network.length * 8 ? address : address + "/" + prefix;
    }
  }

  private static final Pattern IPV4 =
      Pattern.compile(
          "(0|[1-9][0-9]{0,2})\\.(0|[1-9][0-9]{0,2})\\.(0|[1-9][0-9]{0,2})\\.(0|[1-9][0-9]{0,2})");
  private static final Pattern IPV6_CHARS = Pattern.compile("[0-9A-Fa-f:.]{2,45}");
  private static final Pattern NUMERIC_LOOKING =
      Pattern.compile("(?i)(0x[0-9a-f]*|[0-9]+)(\\.(0x[0-9a-f]*|[0-9]*))*");

  private static final Range V4_MAPPED = Range.parse("::ffff:0:0/96");
  private static final Range V4_TRANSLATED = Range.parse("::ffff:0:0:0/96");
  private static final Range V4_COMPATIBLE = Range.parse("::/96");
  private static final Range NAT64 = Range.parse("64:ff9b::/96");
  private static final Range SIX_TO_FOUR = Range.parse("2002::/16");

  private IpAddresses() {}

  /**
   * The IPv4 address an IPv6 address embeds (IPv4-mapped, IPv4-compatible but for {@code ::} and
   * {@code ::1}, IPv4-translated, NAT64, 6to4), if any.
   */
  public static Optional<InetAddress> embeddedIpv4(InetAddress address) {
    byte[] v4 = embeddedIpv4(address.getAddress());
    return v4 == null ? Optional.empty() : Optional.of(bytesToAddress(v4));
  }

  private static byte @Nullable [] embeddedIpv4(byte[] bytes) {
    if (bytes.length != 16) {
      return null;
    }
    if (V4_MAPPED.containsExactly(bytes)
        || V4_TRANSLATED.containsExactly(bytes)
        || NAT64.containsExactly(bytes)
        || (V4_COMPATIBLE.containsExactly(bytes) && !isZeroOrOne(bytes))) {
      return Arrays.copyOfRange(bytes, 12, 16);
    }
    if (SIX_TO_FOUR.containsExactly(bytes)) {
      return Arrays.copyOfRange(bytes, 2, 6);
    }
    return null;
  }

  private static boolean isZeroOrOne(byte[] bytes) {
    for (int i = 0; i < 15; i++) {
      if (bytes[i] != 0) {
        return false;
      }
    }
    return bytes[15] == 0 || bytes[15] == 1;
  }

  /**
   * Parses a strict IP literal without any DNS lookup: dotted-quad IPv4 (no leading zeros, no
   * shortened or hexadecimal forms) or IPv6 (optionally in brackets, no zone id). Anything else,
   * including names, yields empty.
   */
  public static Optional<InetAddress> parseLiteral(String text) {
    String s = text;
    if (s.startsWith("[") && s.endsWith("]")) {
      s = s.substring(1, s.length() - 1);
      if (s.indexOf(':') < 0) {
        return Optional.empty();
      }
    }
    if (IPV4.matcher(s).matches()) {
      byte[] b = new byte[4];
      String[] parts = s.split("\\.");
      for (int i = 0; i < 4; i++) {
        int v = Integer.parseInt(parts[i]);
        if (v > 255) {
          return Optional.empty();
        }
        b[i] = (byte) v;
      }
      return Optional.of(bytesToAddress(b));
    }
    if (s.indexOf(':') >= 0 && IPV6_CHARS.matcher(s).matches()) {
      try {
        // Only hex digits, ':' and '.': InetAddress parses this as a literal, never via DNS.
        InetAddress a = InetAddress.getByName("[" + s + "]");
        byte[] raw = a.getAddress();
        // Keep IPv4-mapped forms as IPv6 so that callers see what was written.
        return Optional.of(raw.length == 4 ? v4MappedAsV6(raw) : a);
      } catch (UnknownHostException | IllegalArgumentException e) {
        return Optional.empty();
      }
    }
    return Optional.empty();
  }

  /**
   * Whether a host name looks like an IP address in some form ({@code 127.1}, {@code 0x7f.1},
   * {@code 2130706433}, {@code 017.0.0.1}, or an unbracketed IPv6 literal). Such names are never
   * resolved: system resolvers turn many of them into addresses.
   */
  public static boolean looksLikeIpLiteral(String host) {
    String s = host.endsWith(".") ? host.substring(0, host.length() - 1) : host;
    if (s.indexOf(':') >= 0 || s.startsWith("[")) {
      return true;
    }
    if (NUMERIC_LOOKING.matcher(s).matches()) {
      return true;
    }
    int dot = s.lastIndexOf('.');
    String last = dot < 0 ? s : s.substring(dot + 1);
    return !last.isEmpty() && last.chars().allMatch(c -> c >= '0' && c <= '9');
  }

  /** Canonical text of an address: dotted quad, or compressed lowercase IPv6 without zone. */
  public static String format(InetAddress address) {
    byte[] b = address.getAddress();
    if (b.length == 4) {
      return (b[0] & 0xff) + "." + (b[1] & 0xff) + "." + (b[2] & 0xff) + "." + (b[3] & 0xff);
    }
    int[] groups = new int[8];
    for (int i = 0; i < 8; i++) {
      groups[i] = ((b[2 * i] & 0xff) << 8) | (b[2 * i + 1] & 0xff);
    }
    int bestStart = -1;
    int bestLen = 0;
    for (int i = 0; i < 8; ) {
      if (groups[i] != 0) {
        i++;
        continue;
      }
      int j = i;
      while (j < 8 && groups[j] == 0) {
        j++;
      }
      if (j - i > bestLen && j - i >= 2) {
        bestStart = i;
        bestLen = j - i;
      }
      i = j;
    }
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < 8; i++) {
      if (i == bestStart) {
        sb.append("::");
        i += bestLen - 1;
        continue;
      }
      if (sb.length() > 0 && sb.charAt(sb.length() - 1) != ':') {
        sb.append(':');
      }
      sb.append(Integer.toHexString(groups[i]));
    }
    return sb.toString().toLowerCase(Locale.ROOT);
  }

  private static InetAddress v4MappedAsV6(byte[] v4) {
    byte[] b = new byte[16];
    b[10] = (byte) 0xff;
    b[11] = (byte) 0xff;
    System.arraycopy(v4, 0, b, 12, 4);
    return bytesToAddress(b);
  }

  private static InetAddress bytesToAddress(byte[] bytes) {
    try {
      if (bytes.length == 16) {
        return Inet6Address.getByAddress(null, bytes, -1);
      }
      return Inet4Address.getByAddress(bytes);
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException("bad address length " + bytes.length, e);
    }
  }

  private static byte[] mask(byte[] bytes, int prefix) {
    byte[] out = bytes.clone();
    for (int i = 0; i < out.length; i++) {
      int bitsHere = Math.max(0, Math.min(8, prefix - 8 * i));
      out[i] = (byte) (out[i] & (0xff << (8 - bitsHere)));
    }
    return out;
  }
}
