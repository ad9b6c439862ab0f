package io.agentnest.internal.egress;

import static io.agentnest.internal.egress.TlsHellos.asRecords;
import static io.agentnest.internal.egress.TlsHellos.clientHello;
import static io.agentnest.internal.egress.TlsHellos.concat;
import static io.agentnest.internal.egress.TlsHellos.extension;
import static io.agentnest.internal.egress.TlsHellos.handshakeBytes;
import static io.agentnest.internal.egress.TlsHellos.message;
import static io.agentnest.internal.egress.TlsHellos.serverName;
import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.internal.egress.SniCheck.Refusal;
import io.agentnest.internal.egress.SniCheck.Verdict;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

/**
 * The CONNECT tunnel's SNI check on real JDK ClientHellos, split every way TCP and TLS allow, and
 * on hostile ones (truncated, fragmented, forged).
 */
class SniCheckTest {
  private static final String HOST = "allowed.test";
  private static final byte[] TLS13 = clientHello(HOST);
  private static final byte[] TLS12 = clientHello(HOST, "TLSv1.2");

  private static Verdict inspect(byte[] bytes) {
    return inspect(new ByteArrayInputStream(bytes));
  }

  private static Verdict inspect(InputStream in) {
    try {
      return SniCheck.inspect(in, HOST);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Test
  void realTls13And12HellosNamingTheConnectHostPassWithEveryByteKept() {
    for (byte[] hello : List.of(TLS13, TLS12)) {
      Verdict v = inspect(hello);
      assertThat(v.passed()).as(v.reason()).isTrue();
      assertThat(v.consumed()).isEqualTo(hello);
      assertThat(v.tls()).isTrue();
    }
  }

  @Test
  void whatFollowsTheHelloIsNotReadBeforeTheVerdict() throws IOException {
    ByteArrayInputStream in =
        new ByteArrayInputStream(concat(TLS13, "after".getBytes(StandardCharsets.US_ASCII)));
    Verdict v = SniCheck.inspect(in, HOST);
    assertThat(v.passed()).isTrue();
    assertThat(v.consumed()).isEqualTo(TLS13);
    assertThat(in.readAllBytes()).asString(StandardCharsets.US_ASCII).isEqualTo("after");
  }

  @Test
  void aNameInAnotherCaseOrWithTheRootDotIsTheSameName() {
    assertThat(inspect(clientHello("Allowed.TEST")).passed()).isTrue();
    assertThat(inspect(asRecords(message(serverName("allowed.test.")), List.of())).passed())
        .isTrue();
  }

  @Test
  void anotherServerNameIsDomainFrontingAndRefused() {
    Verdict v = inspect(clientHello("evil.test"));
    assertThat(v.refusal()).isEqualTo(Refusal.SNI_MISMATCH);
    assertThat(v.reason())
        .contains("evil.test")
        .contains("differs from the CONNECT host allowed.test");
    assertThat(SniCheck.alert(v.refusal())).containsExactly(21, 3, 3, 0, 2, 2, 112);
  }

  @Test
  void aHelloWithoutServerNameIsRefused() {
    Verdict v = inspect(clientHello(null));
    assertThat(v.refusal()).isEqualTo(Refusal.NO_SNI);
    assertThat(v.reason()).contains("no SNI");
  }

  @Test
  void plainTextIsNotTlsAndIsAnsweredAsText() {
    Verdict v =
        inspect("GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    assertThat(v.refusal()).isEqualTo(Refusal.NOT_TLS);
    assertThat(v.tls()).isFalse();
    assertThat(v.reason()).contains("TLS only").contains("GET http://host/path");
  }

  @Test
  void aClientThatSendsNothingPassesWithNothingToForward() {
    Verdict v = inspect(new byte[0]);
    assertThat(v.passed()).isTrue();
    assertThat(v.consumed()).isEmpty();
  }

  @Test
  void encryptedClientHelloAndEsniAreRefused() {
    for (int type : List.of(0xfe0d, 0xfe0a, 0xffce)) {
      byte[] hello =
          asRecords(message(serverName(HOST), extension(type, new byte[] {1, 2, 3})), List.of());
      assertThat(inspect(hello).refusal())
          .as("extension %x", type)
          .isEqualTo(Refusal.ENCRYPTED_HELLO);
    }
  }

  @Test
  void twoNamesOrTwoServerNameExtensionsAreRefused() {
    assertThat(inspect(asRecords(message(serverName(HOST, "evil.test")), List.of())).refusal())
        .isEqualTo(Refusal.BAD_HELLO);
    assertThat(
            inspect(asRecords(message(serverName(HOST), serverName("evil.test")), List.of()))
                .refusal())
        .isEqualTo(Refusal.BAD_HELLO);
    assertThat(
            inspect(asRecords(message(serverName("evil.test"), serverName(HOST)), List.of()))
                .refusal())
        .isEqualTo(Refusal.BAD_HELLO);
  }

  @Test
  void namesThatAreNotHostNamesAreRefused() {
    for (String name : List.of("127.0.0.1", "allowed.test\u0000.evil", "a..b", "-x.test")) {
      Verdict v = inspect(asRecords(message(serverName(name)), List.of()));
      assertThat(v.passed()).as(name).isFalse();
    }
  }

  @Test
  void aDeclaredHelloLargerThanTheCapIsRefusedWithoutWaitingForIt() {
    int huge = SniCheck.MAX_HELLO + 1;
    byte[] head = {22, 3, 1, 0, 4, 1, (byte) (huge >> 16), (byte) (huge >> 8), (byte) huge};
    Verdict v = inspect(head);
    assertThat(v.refusal()).isEqualTo(Refusal.BAD_HELLO);
    assertThat(v.reason()).contains("larger than");
  }

  @Test
  void recordsOfInvalidLengthOrAnotherTypeAreRefused() {
    byte[] handshake = handshakeBytes(TLS13);
    byte[] zero = {22, 3, 1, 0, 0};
    assertThat(inspect(concat(zero, TLS13)).refusal()).isEqualTo(Refusal.BAD_HELLO);
    byte[] tooLong = {22, 3, 1, 0x40, 1};
    assertThat(inspect(tooLong).refusal()).isEqualTo(Refusal.BAD_HELLO);
    // The hello's second half in an application_data record.
    byte[] split = asRecords(handshake, List.of(100));
    byte[] tampered = split.clone();
    tampered[105] = 23;
    assertThat(inspect(tampered).refusal()).isEqualTo(Refusal.BAD_HELLO);
    // A ServerHello where the ClientHello should be.
    byte[] notHello = handshake.clone();
    notHello[0] = 2;
    assertThat(inspect(asRecords(notHello, List.of())).refusal()).isEqualTo(Refusal.BAD_HELLO);
  }

  // ------------------------------------------------------------------------------ properties

  @Property(tries = 300)
  void anyTcpAndTlsFragmentationOfARealHelloGivesTheSameVerdict(
      @ForAll("fragmentSizes") List<Integer> records,
      @ForAll("fragmentSizes") List<Integer> reads,
      @ForAll boolean tls12) {
    byte[] hello = asRecords(handshakeBytes(tls12 ? TLS12 : TLS13), records);
    Verdict v = inspect(new Trickle(hello, reads));
    assertThat(v.passed()).as(v.reason()).isTrue();
    assertThat(v.consumed()).isEqualTo(hello);
  }

  @Property(tries = 300)
  void fragmentationNeverHidesAFrontedName(
      @ForAll("fragmentSizes") List<Integer> records,
      @ForAll("fragmentSizes") List<Integer> reads) {
    byte[] hello = asRecords(handshakeBytes(clientHello("evil.test")), records);
    assertThat(inspect(new Trickle(hello, reads)).refusal()).isEqualTo(Refusal.SNI_MISMATCH);
  }

  @Property(tries = 300)
  void everyTruncationOfAHelloIsRefused(
      @ForAll @IntRange(min = 1, max = 100_000) int cut,
      @ForAll("fragmentSizes") List<Integer> records) {
    byte[] hello = asRecords(handshakeBytes(TLS13), records);
    byte[] truncated = Arrays.copyOf(hello, Math.min(cut, hello.length - 1));
    Verdict v = inspect(truncated);
    assertThat(v.refusal()).isEqualTo(Refusal.BAD_HELLO);
    assertThat(v.consumed()).isEqualTo(truncated);
  }

  @Property(tries = 500)
  void arbitraryBytesNeverPassAndNeverReadPastTheBound(@ForAll @Size(max = 3000) byte[] hostile) {
    Verdict v = inspect(hostile);
    assertThat(v.passed()).isEqualTo(hostile.length == 0);
    assertThat(v.consumed().length).isLessThanOrEqualTo(hostile.length);
  }

  @Property(tries = 500)
  void arbitraryBytesBehindAValidHeaderNeverPass(@ForAll @Size(min = 1, max = 3000) byte[] body) {
    byte[] msg = new byte[4 + body.length];
    msg[0] = 1;
    msg[1] = (byte) (body.length >> 16);
    msg[2] = (byte) (body.length >> 8);
    msg[3] = (byte) body.length;
    System.arraycopy(body, 0, msg, 4, body.length);
    assertThat(inspect(asRecords(msg, List.of())).passed()).isFalse();
  }

  @Property(tries = 500)
  void aCorruptedByteOfAFrontingHelloNeverLetsItPass(
      @ForAll @IntRange(min = 0, max = 10_000) int at, @ForAll byte value) {
    byte[] hello = clientHello("allowed.tesu").clone();
    int i = at % hello.length;
    hello[i] = value;
    // Only turning 'u' into 't' names the CONNECT host; every other change must be refused.
    Verdict v = inspect(hello);
    if (v.passed()) {
      assertThat(new String(hello, StandardCharsets.ISO_8859_1)).contains(HOST);
    }
  }

  @Provide
  Arbitrary<List<Integer>> fragmentSizes() {
    return Arbitraries.integers().between(1, 700).list().ofMinSize(1).ofMaxSize(20);
  }

  /** Hands out its bytes in reads of the given sizes, as a slow TCP stream would. */
  private static final class Trickle extends InputStream {
    private final byte[] data;
    private final List<Integer> sizes;
    private int pos;
    private int turn;

    Trickle(byte[] data, List<Integer> sizes) {
      this.data = data;
      this.sizes = sizes;
    }

    @Override
    public int read() {
      return pos < data.length ? data[pos++] & 0xff : -1;
    }

    @Override
    public int read(byte[] b, int off, int len) {
      if (len == 0) {
        return 0;
      }
      if (pos >= data.length) {
        return -1;
      }
      int n = Math.min(Math.min(len, sizes.get(turn++ % sizes.size())), data.length - pos);
      System.arraycopy(data, pos, b, off, n);
      pos += n;
      return n;
    }
  }
}
