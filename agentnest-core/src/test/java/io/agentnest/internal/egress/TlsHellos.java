package io.agentnest.internal.egress;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.Arrays;
import java.util.List;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;
import org.jspecify.annotations.Nullable;

/** Real TLS ClientHellos, as the JDK's SSLEngine writes them, and ways to take them apart. */
final class TlsHellos {
  private TlsHellos() {}

  /** The first flight of a JDK TLS client: one or more TLS records holding its ClientHello. */
  static byte[] clientHello(@Nullable String sni, String... protocols) {
    try {
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(null, null, null);
      SSLEngine engine = ctx.createSSLEngine();
      engine.setUseClientMode(true);
      SSLParameters p = engine.getSSLParameters();
      p.setServerNames(sni == null ? List.of() : List.of(new SNIHostName(sni)));
      if (protocols.length > 0) {
        p.setProtocols(protocols);
      }
      engine.setSSLParameters(p);
      engine.beginHandshake();
      ByteBuffer out = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
      engine.wrap(ByteBuffer.allocate(0), out);
      out.flip();
      byte[] b = new byte[out.remaining()];
      out.get(b);
      return b;
    } catch (GeneralSecurityException | SSLException e) {
      throw new IllegalStateException("the JDK could not write a ClientHello", e);
    }
  }

  /** The handshake messages carried by a sequence of TLS records (headers removed). */
  static byte[] handshakeBytes(byte[] records) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int pos = 0;
    while (pos + 5 <= records.length) {
      int len = ((records[pos + 3] & 0xff) << 8) | (records[pos + 4] & 0xff);
      out.write(records, pos + 5, len);
      pos += 5 + len;
    }
    return out.toByteArray();
  }

  /** The handshake bytes re-split into TLS handshake records of the given fragment sizes. */
  static byte[] asRecords(byte[] handshake, List<Integer> sizes) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int pos = 0;
    int i = 0;
    while (pos < handshake.length) {
      int n =
          Math.min(
              handshake.length - pos,
              Math.max(1, sizes.isEmpty() ? 16384 : sizes.get(i++ % sizes.size())));
      out.write(new byte[] {22, 3, 1, (byte) (n >> 8), (byte) n}, 0, 5);
      out.write(handshake, pos, n);
      pos += n;
    }
    return out.toByteArray();
  }

  /** A ClientHello handshake message built field by field (for hostile variants). */
  static byte[] message(byte[]... extensions) {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.write(3);
    body.write(3);
    body.writeBytes(new byte[32]); // random
    body.write(0); // session id
    body.writeBytes(new byte[] {0, 2, 0x13, 0x01}); // one cipher suite
    body.writeBytes(new byte[] {1, 0}); // null compression
    ByteArrayOutputStream ext = new ByteArrayOutputStream();
    for (byte[] e : extensions) {
      ext.writeBytes(e);
    }
    body.write(ext.size() >> 8);
    body.write(ext.size());
    body.writeBytes(ext.toByteArray());
    byte[] b = body.toByteArray();
    ByteArrayOutputStream msg = new ByteArrayOutputStream();
    msg.writeBytes(
        new byte[] {1, (byte) (b.length >> 16), (byte) (b.length >> 8), (byte) b.length});
    msg.writeBytes(b);
    return msg.toByteArray();
  }

  /** An extension of the given type and data. */
  static byte[] extension(int type, byte[] data) {
    byte[] e = new byte[4 + data.length];
    e[0] = (byte) (type >> 8);
    e[1] = (byte) type;
    e[2] = (byte) (data.length >> 8);
    e[3] = (byte) data.length;
    System.arraycopy(data, 0, e, 4, data.length);
    return e;
  }

  /** A server_name extension with these host_name entries. */
  static byte[] serverName(String... names) {
    ByteArrayOutputStream list = new ByteArrayOutputStream();
    for (String n : names) {
      byte[] b = n.getBytes(StandardCharsets.ISO_8859_1);
      list.write(0);
      list.write(b.length >> 8);
      list.write(b.length);
      list.writeBytes(b);
    }
    byte[] l = list.toByteArray();
    byte[] data = new byte[2 + l.length];
    data[0] = (byte) (l.length >> 8);
    data[1] = (byte) l.length;
    System.arraycopy(l, 0, data, 2, l.length);
    return extension(0, data);
  }

  static byte[] concat(byte[] a, byte[] b) {
    byte[] c = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, c, a.length, b.length);
    return c;
  }
}
