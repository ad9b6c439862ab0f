package io.agentnest.internal.egress;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * What the egress proxy needs from a TLS ClientHello handshake message (RFC 8446 4.1.2, RFC 5246
 * 7.4.1.2): the names in its server_name extension (RFC 6066 3) and whether it hides the real one
 * in an encrypted ClientHello. The parser is strict where a lenient one could be fooled: lengths
 * must add up exactly, an extension may appear only once, and anything it cannot account for is
 * {@link Malformed}.
 *
 * @param hostNames every host_name entry of server_name, as sent (empty when there is none)
 * @param encrypted whether it carries encrypted_client_hello (or the older encrypted_server_name):
 *     the name the server routes on is then not the one in the clear
 */
record ClientHello(List<String> hostNames, boolean encrypted) {
  static final int HANDSHAKE_CLIENT_HELLO = 1;
  private static final int EXT_SERVER_NAME = 0;
  private static final int NAME_TYPE_HOST = 0;
  private static final int MAX_HOST_NAME = 255;

  ClientHello {
    hostNames = List.copyOf(hostNames);
  }

  /** The ClientHello is not well-formed; the message says where. */
  static final class Malformed extends Exception {
    private static final long serialVersionUID = 1L;

    Malformed(String message) {
      super(message);
    }
  }

  /**
   * Parses the body of a client_hello handshake message (after its 4-byte type and length).
   *
   * @throws Malformed when it is not a well-formed ClientHello
   */
  static ClientHello parse(byte[] body) throws Malformed {
    Cursor c = new Cursor(body, 0, body.length);
    int major = c.u8("legacy_version");
    c.u8("legacy_version");
    if (major != 3) {
      throw new Malformed("legacy_version is not TLS (major " + major + ")");
    }
    c.skip(32, "random");
    int session = c.u8("legacy_session_id");
    if (session > 32) {
      throw new Malformed("legacy_session_id is longer than 32 bytes");
    }
    c.skip(session, "legacy_session_id");
    int suites = c.u16("cipher_suites");
    if (suites < 2 || suites % 2 != 0) {
      throw new Malformed("cipher_suites has an invalid length");
    }
    c.skip(suites, "cipher_suites");
    int compression = c.u8("legacy_compression_methods");
    if (compression < 1) {
      throw new Malformed("legacy_compression_methods is empty");
    }
    c.skip(compression, "legacy_compression_methods");
    List<String> names = new ArrayList<>(1);
    boolean encrypted = false;
    if (c.remaining() == 0) {
      // TLS 1.2 and older may omit the extensions altogether: then there is no name.
      return new ClientHello(names, false);
    }
    int extLength = c.u16("extensions");
    if (extLength != c.remaining()) {
      throw new Malformed("the extensions do not fill the ClientHello exactly");
    }
    Set<Integer> seen = new HashSet<>();
    while (c.remaining() > 0) {
      int type = c.u16("extension type");
      int length = c.u16("extension length");
      Cursor data = c.sub(length, "extension data");
      if (!seen.add(type)) {
        throw new Malformed("extension " + type + " appears more than once");
      }
      if (type == EXT_SERVER_NAME) {
        names.addAll(serverNames(data));
      } else if (isEncryptedHello(type)) {
        encrypted = true;
      }
    }
    return new ClientHello(names, encrypted);
  }

  /**
   * encrypted_client_hello (0xfe0d, and the draft code points 0xfe08 to 0xfe0c) and the older
   * encrypted_server_name (0xffce).
   */
  static boolean isEncryptedHello(int type) {
    return (type >= 0xfe08 && type <= 0xfe0d) || type == 0xffce;
  }

  private static List<String> serverNames(Cursor data) throws Malformed {
    int listLength = data.u16("server_name_list");
    if (listLength != data.remaining() || listLength == 0) {
      throw new Malformed("server_name_list does not fill its extension exactly");
    }
    List<String> names = new ArrayList<>(1);
    while (data.remaining() > 0) {
      int nameType = data.u8("server name type");
      int length = data.u16("server name length");
      Cursor name = data.sub(length, "server name");
      if (nameType != NAME_TYPE_HOST) {
        throw new Malformed("server_name has an entry of unknown type " + nameType);
      }
      if (length == 0 || length > MAX_HOST_NAME) {
        throw new Malformed("a host_name in server_name is empty or longer than 255 bytes");
      }
      names.add(name.ascii());
    }
    return names;
  }

  /** Reads big-endian fields within [pos, end) of a byte array; never past its end. */
  private static final class Cursor {
    private final byte[] b;
    private int pos;
    private final int end;

    Cursor(byte[] b, int pos, int end) {
      this.b = b;
      this.pos = pos;
      this.end = end;
    }

    int remaining() {
      return end - pos;
    }

    private void need(int n, String what) throws Malformed {
      if (n < 0 || n > remaining()) {
        throw new Malformed("the ClientHello ends inside " + what);
      }
    }

    int u8(String what) throws Malformed {
      need(1, what);
      return b[pos++] & 0xff;
    }

    int u16(String what) throws Malformed {
      need(2, what);
      int v = ((b[pos] & 0xff) << 8) | (b[pos + 1] & 0xff);
      pos += 2;
      return v;
    }

    void skip(int n, String what) throws Malformed {
      need(n, what);
      pos += n;
    }

    Cursor sub(int n, String what) throws Malformed {
      need(n, what);
      Cursor c = new Cursor(b, pos, pos + n);
      pos += n;
      return c;
    }

    /** The rest as text; a byte outside printable ASCII makes it malformed (RFC 6066 3). */
    String ascii() throws Malformed {
      for (int i = pos; i < end; i++) {
        if (b[i] <= 0x20 || b[i] >= 0x7f) {
          throw new Malformed("a host_name in server_name has a byte outside printable ASCII");
        }
      }
      String s = new String(b, pos, end - pos, StandardCharsets.US_ASCII);
      pos = end;
      return s;
    }
  }
}
