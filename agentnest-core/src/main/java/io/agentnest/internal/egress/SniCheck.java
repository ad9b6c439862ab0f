package io.agentnest.internal.egress;

import io.agentnest.NetworkPolicy;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import org.jspecify.annotations.Nullable;

/**
 * Reads the first thing a client sends through a CONNECT tunnel to a name and lets it through only
 * when it is a TLS ClientHello whose server_name is that same name. Without this check a sandbox
 * allowed to reach one name on a shared front end (a CDN) could ask the front end for any other
 * name it serves: {@code CONNECT allowed.example:443}, then SNI {@code evil.example} (domain
 * fronting by SNI).
 *
 * <p>The ClientHello may arrive in any number of TCP reads and TLS records; everything read is
 * kept, bounded by {@link #MAX_HELLO} plus one record, and handed back so the proxy forwards the
 * exact bytes once the verdict is known. Nothing reaches the destination before that.
 */
final class SniCheck {
  /** TLSPlaintext.length may not exceed 2^14 (RFC 8446 5.1). */
  static final int MAX_RECORD = 1 << 14;

  /**
   * A ClientHello larger than this is refused (real ones, post-quantum key shares included, are a
   * few KiB).
   */
  static final int MAX_HELLO = 64 * 1024;

  private static final int CONTENT_HANDSHAKE = 22;

  private SniCheck() {}

  /** Why a tunnel's first flight was refused; {@link #code} is the rule in the network event. */
  enum Refusal {
    NOT_TLS("not-tls"),
    BAD_HELLO("bad-client-hello"),
    NO_SNI("no-sni"),
    SNI_MISMATCH("sni-mismatch"),
    ENCRYPTED_HELLO("encrypted-client-hello");

    final String code;

    Refusal(String code) {
      this.code = code;
    }
  }

  /**
   * The outcome for one tunnel.
   *
   * @param refusal null when the bytes may go on
   * @param reason why it was refused (safe to show: built from validated names only)
   * @param consumed every byte read from the client, to forward when it passes
   * @param tls whether the client sent TLS records (a refusal is then answered with a TLS alert)
   */
  @SuppressWarnings("ArrayRecordComponent") // internal, never compared
  record Verdict(@Nullable Refusal refusal, String reason, byte[] consumed, boolean tls) {
    boolean passed() {
      return refusal == null;
    }
  }

  /**
   * Reads from {@code in} up to the end of the first ClientHello and judges it against {@code
   * expectedHost}, a name in canonical form ({@link NetworkPolicy#normalizeHost}). A client that
   * closes before sending anything passes with nothing to forward.
   */
  static Verdict inspect(InputStream in, String expectedHost) throws IOException {
    ByteArrayOutputStream consumed = new ByteArrayOutputStream(2048);
    ByteArrayOutputStream message = new ByteArrayOutputStream(2048);
    int expected = -1; // the handshake message's full length, once its header is in
    boolean first = true;
    while (expected < 0 || message.size() < expected) {
      byte[] header = in.readNBytes(5);
      consumed.write(header);
      if (header.length == 0 && first) {
        return new Verdict(null, "the client sent nothing", consumed.toByteArray(), false);
      }
      boolean tlsHeader =
          header.length > 0
              && (header[0] & 0xff) == CONTENT_HANDSHAKE
              && (header.length < 2 || header[1] == 3)
              && (header.length < 3 || (header[2] & 0xff) <= 4);
      if (first && !tlsHeader) {
        return refuse(
            Refusal.NOT_TLS,
            "a CONNECT tunnel to a name carries TLS only, and this client did not start with a"
                + " TLS ClientHello; send plain HTTP as a proxy request (GET http://host/path)",
            consumed,
            false);
      }
      first = false;
      if (header.length < 5) {
        return truncated(consumed);
      }
      if (!tlsHeader) {
        return refuse(
            Refusal.BAD_HELLO,
            "the ClientHello is interrupted by a record that is not a TLS handshake record",
            consumed,
            true);
      }
      int length = ((header[3] & 0xff) << 8) | (header[4] & 0xff);
      if (length == 0 || length > MAX_RECORD) {
        return refuse(
            Refusal.BAD_HELLO,
            "a TLS record of the ClientHello has an invalid length (" + length + ")",
            consumed,
            true);
      }
      byte[] fragment = in.readNBytes(length);
      consumed.write(fragment);
      if (fragment.length < length) {
        return truncated(consumed);
      }
      message.write(fragment);
      if (expected < 0 && message.size() >= 4) {
        byte[] m = message.toByteArray();
        if ((m[0] & 0xff) != ClientHello.HANDSHAKE_CLIENT_HELLO) {
          return refuse(
              Refusal.BAD_HELLO,
              "the first TLS handshake message is not a ClientHello",
              consumed,
              true);
        }
        int bodyLength = ((m[1] & 0xff) << 16) | ((m[2] & 0xff) << 8) | (m[3] & 0xff);
        if (bodyLength > MAX_HELLO) {
          return refuse(
              Refusal.BAD_HELLO,
              "the ClientHello is larger than " + MAX_HELLO + " bytes",
              consumed,
              true);
        }
        expected = 4 + bodyLength;
      }
    }
    byte[] m = message.toByteArray();
    ClientHello hello;
    try {
      hello = ClientHello.parse(Arrays.copyOfRange(m, 4, expected));
    } catch (ClientHello.Malformed e) {
      return refuse(
          Refusal.BAD_HELLO, "malformed TLS ClientHello: " + e.getMessage(), consumed, true);
    }
    return judge(hello, expectedHost, consumed);
  }

  private static Verdict judge(ClientHello hello, String expectedHost, ByteArrayOutputStream b) {
    if (hello.encrypted()) {
      return refuse(
          Refusal.ENCRYPTED_HELLO,
          "the ClientHello is encrypted (ECH/ESNI): the server name it asks for cannot be checked"
              + " against the CONNECT host "
              + expectedHost,
          b,
          true);
    }
    List<String> names = hello.hostNames();
    if (names.isEmpty()) {
      return refuse(
          Refusal.NO_SNI,
          "the ClientHello names no server (no SNI): a tunnel to "
              + expectedHost
              + " must send that name as its TLS server name",
          b,
          true);
    }
    if (names.size() > 1) {
      return refuse(Refusal.BAD_HELLO, "the ClientHello names more than one server (SNI)", b, true);
    }
    Optional<String> name = NetworkPolicy.normalizeHost(names.get(0));
    if (name.isEmpty()) {
      return refuse(
          Refusal.BAD_HELLO, "the TLS server name (SNI) is not a valid host name", b, true);
    }
    if (!name.get().equals(expectedHost)) {
      return refuse(
          Refusal.SNI_MISMATCH,
          "the TLS server name (SNI) "
              + name.get()
              + " differs from the CONNECT host "
              + expectedHost
              + " (domain fronting): connect to the name you ask the server for",
          b,
          true);
    }
    return new Verdict(null, "server name " + name.get(), b.toByteArray(), true);
  }

  private static Verdict truncated(ByteArrayOutputStream b) {
    return refuse(
        Refusal.BAD_HELLO,
        "the client ended the tunnel in the middle of its TLS ClientHello",
        b,
        true);
  }

  private static Verdict refuse(
      Refusal refusal, String reason, ByteArrayOutputStream b, boolean tls) {
    return new Verdict(refusal, reason, b.toByteArray(), tls);
  }

  /**
   * A fatal TLS alert (RFC 8446 6): unrecognized_name for a name problem, access_denied otherwise.
   * Sent in the clear, as any alert before the handshake completes.
   */
  static byte[] alert(Refusal refusal) {
    int description = refusal == Refusal.SNI_MISMATCH || refusal == Refusal.NO_SNI ? 112 : 49;
    return new byte[] {21, 3, 3, 0, 2, 2, (byte) description};
  }
}
