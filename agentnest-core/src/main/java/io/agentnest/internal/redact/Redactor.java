package io.agentnest.internal.redact;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Compiled redaction rules: secret values (with their base64, hex and URL-encoded forms) and
 * well-known credential shapes. One Aho-Corasick automaton over bytes finds every secret and every
 * credential's anchor (e.g. {@code ghp_}, {@code AKIA}, {@code eyJ}) in a single pass; {@link
 * RedactingStream} uses it to mask streamed output while holding back only the bytes that could
 * still turn into a match.
 *
 * <p>Immutable and thread-safe; create one per sandbox and a stream per output stream.
 */
public final class Redactor {
  /** Masks carry the rule, never the value. */
  static String mask(String label) {
    return "[REDACTED:" + label + "]";
  }

  /** A credential shape: found by an anchor literal, extended while bytes continue it. */
  static final class TokenRule {
    final String label;
    final List<String> anchors;
    final boolean[] continues;
    final Pattern pattern;
    final int maxLen;
    final boolean anyByte;

    TokenRule(
        String label,
        List<String> anchors,
        @Nullable String continueChars,
        String regex,
        int maxLen) {
      this.label = label;
      this.anchors = anchors;
      this.continues = new boolean[256];
      this.anyByte = continueChars == null;
      if (continueChars != null) {
        Pattern cls = Pattern.compile("[" + continueChars + "]");
        for (int b = 0; b < 256; b++) {
          continues[b] = cls.matcher(String.valueOf((char) b)).matches();
        }
      }
      this.pattern = Pattern.compile(regex);
      this.maxLen = maxLen;
    }

    /** Whether byte {@code b} extends the token whose bytes so far are {@code [start, end)}. */
    boolean extendsWith(byte[] buf, int start, int end, int b) {
      int len = end - start;
      if (len >= maxLen) {
        return false;
      }
      if (!anyByte) {
        return continues[b & 0xff];
      }
      // A PEM block: anything but a private key header stops at the end of its first line.
      if ((b == '\n' && len <= 100) || (len == 80 && indexOf(buf, start, end, (byte) '\n') < 0)) {
        return new String(buf, start, len, StandardCharsets.ISO_8859_1).contains("PRIVATE KEY");
      }
      return true;
    }

    /** Whether a token that may still grow is already complete (a PEM block's END line). */
    boolean complete(byte[] buf, int start, int end) {
      if (!anyByte || end - start < 60 || buf[end - 1] != '-') {
        return false;
      }
      String tail = new String(buf, end - 60, 60, StandardCharsets.ISO_8859_1);
      return tail.endsWith("KEY-----") && tail.contains("-----END ");
    }

    private static int indexOf(byte[] buf, int from, int to, byte v) {
      for (int i = from; i < to; i++) {
        if (buf[i] == v) {
          return i;
        }
      }
      return -1;
    }
  }

  static final List<TokenRule> DEFAULT_RULES =
      List.of(
          new TokenRule(
              "aws-access-key",
              List.of("AKIA", "ASIA"),
              "A-Z0-9",
              "(A[KS]IA[A-Z0-9]{16})(?![A-Z0-9])",
              40),
          new TokenRule(
              "github-token",
              List.of("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
              "A-Za-z0-9_",
              "((?:gh[pousr]_[A-Za-z0-9]{30,255})|(?:github_pat_[A-Za-z0-9_]{22,255}))",
              300),
          new TokenRule(
              "gitlab-token",
              List.of("glpat-"),
              "A-Za-z0-9_\\-",
              "(glpat-[A-Za-z0-9_\\-]{20,})",
              300),
          new TokenRule(
              "slack-token",
              List.of("xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-"),
              "A-Za-z0-9\\-",
              "(xox[abprs]-[A-Za-z0-9\\-]{10,})",
              300),
          new TokenRule(
              "jwt",
              List.of("eyJ"),
              "A-Za-z0-9_.\\-",
              "(eyJ[A-Za-z0-9_\\-]{5,}\\.[A-Za-z0-9_\\-]{5,}\\.[A-Za-z0-9_\\-]{5,})",
              8192),
          new TokenRule(
              "google-api-key", List.of("AIza"), "A-Za-z0-9_\\-", "(AIza[0-9A-Za-z_\\-]{35})", 60),
          new TokenRule(
              "stripe-key",
              List.of("sk_live_", "rk_live_", "sk_test_", "rk_test_"),
              "A-Za-z0-9",
              "([sr]k_(?:live|test)_[A-Za-z0-9]{16,})",
              300),
          new TokenRule(
              "bearer-token",
              List.of("Bearer ", "bearer ", "BEARER "),
              "A-Za-z0-9._~+/=\\-",
              "[Bb][Ee][Aa][Rr][Ee][Rr] ([A-Za-z0-9._~+/\\-]{8,}=*)",
              4096),
          new TokenRule(
              "url-password",
              List.of("://"),
              "^\\s/?#@\"'<>",
              "://[^:/@\\s]{1,256}:([^@\\s/]{1,256})@",
              600),
          new TokenRule(
              "private-key",
              List.of("-----BEGIN "),
              null,
              "(-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY-----[\\s\\S]*?-----END [A-Z0-9 ]{0,40}PRIVATE"
                  + " KEY-----)",
              16384));

  /** Shorter base64 runs would mask ordinary text. */
  static final int MIN_BASE64 = 6;

  /** Raw, hex and URL-encoded forms of the secrets, and the credential rules' anchors. */
  final Automaton plain;

  /** Per plain pattern: the secret's label, or null for a credential rule's anchor. */
  final @Nullable String[] plainLabel;

  /** Per plain pattern: the credential rule whose anchor it is, or null for a secret form. */
  final @Nullable TokenRule[] plainRule;

  /**
   * Base64 forms of the secrets. A stream steps this automaton over every byte but CR and LF, so
   * that base64 wrapped into lines (MIME, PEM, {@code base64} without {@code -w0}) still matches
   * where a line break falls inside the secret's encoding.
   */
  final Automaton wrapped;

  /** Per wrapped pattern: the secret's label. */
  final String[] wrappedLabel;

  /**
   * Hex forms of the secrets, lower case. A stream steps this automaton over every byte but
   * separators (space, tab, {@code :}, {@code -}, CR, LF), with {@code A-F} read as {@code a-f}, so
   * that hex dumps ({@code od -An -tx1}, wrapped into lines; {@code xxd -p}; {@code aa:bb:cc};
   * {@code AA-BB-CC}) still match.
   */
  final Automaton separatedHex;

  /** Per separated-hex pattern: the secret's label. */
  final String[] separatedHexLabel;

  /** The longest secret form, in bytes. */
  final int maxLiteral;

  /** The longest credential token. */
  final int maxToken;

  private Redactor(Map<String, String> secrets, List<TokenRule> rules) {
    List<byte[]> plainPats = new ArrayList<>();
    List<@Nullable String> labels = new ArrayList<>();
    List<@Nullable TokenRule> ruleOf = new ArrayList<>();
    List<byte[]> b64Pats = new ArrayList<>();
    List<String> b64Labels = new ArrayList<>();
    List<byte[]> hexPats = new ArrayList<>();
    List<String> hexLabels = new ArrayList<>();
    int maxLit = 0;
    for (Map.Entry<String, String> e : secrets.entrySet()) {
      String hex = HexFormat.of().formatHex(e.getValue().getBytes(StandardCharsets.UTF_8));
      if (!hex.isEmpty()) {
        hexPats.add(hex.getBytes(StandardCharsets.ISO_8859_1));
        hexLabels.add(e.getKey());
      }
      Forms forms = forms(e.getValue());
      for (byte[] f : forms.plain()) {
        plainPats.add(f);
        labels.add(e.getKey());
        ruleOf.add(null);
        maxLit = Math.max(maxLit, f.length);
      }
      for (byte[] f : forms.base64()) {
        b64Pats.add(f);
        b64Labels.add(e.getKey());
        maxLit = Math.max(maxLit, f.length);
      }
    }
    int maxTok = 0;
    for (TokenRule r : rules) {
      maxTok = Math.max(maxTok, r.maxLen);
      for (String a : r.anchors) {
        plainPats.add(a.getBytes(StandardCharsets.ISO_8859_1));
        labels.add(null);
        ruleOf.add(r);
      }
    }
    this.plain = new Automaton(plainPats);
    this.plainLabel = labels.toArray(new String[0]);
    this.plainRule = ruleOf.toArray(new TokenRule[0]);
    this.wrapped = new Automaton(b64Pats);
    this.wrappedLabel = b64Labels.toArray(new String[0]);
    this.separatedHex = new Automaton(hexPats);
    this.separatedHexLabel = hexLabels.toArray(new String[0]);
    this.maxLiteral = maxLit;
    this.maxToken = maxTok;
  }

  // Immutable, so every sandbox without secrets shares one (most have none).
  private static final Redactor DEFAULTS = new Redactor(Map.of(), DEFAULT_RULES);
  private static final Redactor NOTHING = new Redactor(Map.of(), List.of());

  /** Secrets by label (e.g. the environment variable's name) plus the default credential rules. */
  public static Redactor of(Map<String, String> secrets) {
    return secrets.isEmpty() ? DEFAULTS : new Redactor(secrets, DEFAULT_RULES);
  }

  /** Only the given secrets, no credential shapes. */
  public static Redactor secretsOnly(Map<String, String> secrets) {
    return secrets.isEmpty() ? NOTHING : new Redactor(secrets, List.of());
  }

  /** Only the default credential rules. */
  public static Redactor defaults() {
    return DEFAULTS;
  }

  /** A fresh stream state: one per output stream. */
  public RedactingStream stream() {
    return new RedactingStream(this, true);
  }

  /**
   * A stream that only looks: it counts what it would mask and releases nothing (no copies), for
   * checking data that is refused rather than masked (binary rich outputs, snapshot parts).
   */
  public RedactingStream scanner() {
    return new RedactingStream(this, false);
  }

  /** What {@code data} would have masked, by rule or secret name; empty when it is clean. */
  public Map<String, Integer> scan(byte[] data) {
    RedactingStream s = scanner();
    s.feed(data, 0, data.length);
    s.finish();
    return s.counts();
  }

  /** Redacts a whole text at once (results, tracebacks, error messages). */
  public String redact(String text, Counter counter) {
    byte[] in = text.getBytes(StandardCharsets.UTF_8);
    byte[] out = redact(in, counter);
    return out == in ? text : new String(out, StandardCharsets.UTF_8);
  }

  /** Redacts bytes at once (file reads). */
  public byte[] redact(byte[] data, Counter counter) {
    RedactingStream s = stream();
    byte[] a = s.feed(data, 0, data.length);
    byte[] b = s.finish();
    s.counts().forEach(counter::add);
    if (s.counts().isEmpty()) {
      return data;
    }
    byte[] all = new byte[a.length + b.length];
    System.arraycopy(a, 0, all, 0, a.length);
    System.arraycopy(b, 0, all, a.length, b.length);
    return all;
  }

  /** Counts redactions by rule (never values). */
  public interface Counter {
    void add(String rule, int count);
  }

  private static final HexFormat UPPER_HEX = HexFormat.of().withUpperCase();

  /** The forms of one secret: matched as they are, and base64 (matched across line breaks). */
  record Forms(List<byte[]> plain, List<byte[]> base64) {}

  /** The forms in which a secret is recognised: raw, base64 (any alignment), hex, URL-encoded. */
  static Forms forms(String secret) {
    byte[] raw = secret.getBytes(StandardCharsets.UTF_8);
    Map<String, byte[]> out = new LinkedHashMap<>();
    out.put(new String(raw, StandardCharsets.ISO_8859_1), raw);
    // HexFormat, not String.format per byte: that was half of a sandbox's redactor before the JIT.
    String lower = HexFormat.of().formatHex(raw);
    out.put(lower, lower.getBytes(StandardCharsets.ISO_8859_1));
    String upper = lower.toUpperCase(Locale.ROOT);
    out.put(upper, upper.getBytes(StandardCharsets.ISO_8859_1));
    StringBuilder pct = new StringBuilder();
    for (byte b : raw) {
      int c = b & 0xff;
      if ((c >= 'a' && c <= 'z')
          || (c >= 'A' && c <= 'Z')
          || (c >= '0' && c <= '9')
          || c == '-'
          || c == '.'
          || c == '_'
          || c == '~') {
        pct.append((char) c);
      } else {
        pct.append('%').append(UPPER_HEX.toHexDigits((byte) c));
      }
    }
    String pu = pct.toString();
    out.put(pu, pu.getBytes(StandardCharsets.ISO_8859_1));
    String pl = lowerHexEscapes(pu);
    out.put(pl, pl.getBytes(StandardCharsets.ISO_8859_1));
    String plus = pu.replace("%20", "+");
    out.put(plus, plus.getBytes(StandardCharsets.ISO_8859_1));
    // Python's urllib.parse.quote and encodeURI leave '/' as it is (found by the escape suite).
    String slash = pu.replace("%2F", "/");
    out.put(slash, slash.getBytes(StandardCharsets.ISO_8859_1));
    String slashLower = lowerHexEscapes(slash);
    out.put(slashLower, slashLower.getBytes(StandardCharsets.ISO_8859_1));
    Map<String, byte[]> b64 = new LinkedHashMap<>();
    for (String f : base64Forms(raw)) {
      if (!out.containsKey(f)) {
        b64.put(f, f.getBytes(StandardCharsets.ISO_8859_1));
      }
    }
    return new Forms(new ArrayList<>(out.values()), new ArrayList<>(b64.values()));
  }

  /**
   * What base64 of any text containing {@code raw} must contain, standard and URL-safe, for each of
   * the three alignments the secret can have in the encoded text. Normally that is the run of
   * characters whose six bits all come from the secret (the core). For a secret so short that its
   * core is under {@link #MIN_BASE64} characters (4 bytes), the core would mask ordinary text, so
   * the characters on either side, which carry the secret's remaining bits mixed with bits of its
   * neighbours, are added in every combination those neighbour bits allow: every secret bit is then
   * matched, which makes such a form as specific as the secret itself.
   */
  static List<String> base64Forms(byte[] raw) {
    Set<String> out = new LinkedHashSet<>();
    for (int align = 0; align < 3; align++) {
      int bits = (align + raw.length) * 8;
      int from = (align * 8 + 5) / 6; // first character made of the secret's bits only
      int to = bits / 6; // end of the last one
      if (to - from >= MIN_BASE64) {
        byte[] padded = new byte[align + raw.length];
        System.arraycopy(raw, 0, padded, align, raw.length);
        out.add(Base64.getEncoder().withoutPadding().encodeToString(padded).substring(from, to));
        continue;
      }
      boolean lead = (align * 8) % 6 != 0;
      boolean trail = bits % 6 != 0;
      // Neighbour bits inside the partial characters: the low bits of the byte before the
      // secret, the high bits of the byte after it.
      int leadBits = lead ? (align * 8) % 6 : 0;
      int trailBits = trail ? 6 - bits % 6 : 0;
      for (int pre = 0; pre < (1 << leadBits); pre++) {
        for (int post = 0; post < (1 << trailBits); post++) {
          byte[] padded = new byte[align + raw.length + 1];
          if (align > 0) {
            padded[align - 1] = (byte) pre;
          }
          System.arraycopy(raw, 0, padded, align, raw.length);
          padded[align + raw.length] = (byte) (post << (8 - Math.max(trailBits, 1)));
          String enc = Base64.getEncoder().withoutPadding().encodeToString(padded);
          out.add(enc.substring(lead ? from - 1 : from, trail ? to + 1 : to));
        }
      }
    }
    Set<String> all = new LinkedHashSet<>(out);
    for (String f : out) {
      all.add(f.replace('+', '-').replace('/', '_'));
    }
    return new ArrayList<>(all);
  }

  private static String lowerHexEscapes(String s) {
    StringBuilder b = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '%' && i + 2 < s.length()) {
        b.append('%').append(s.substring(i + 1, i + 3).toLowerCase(Locale.ROOT));
        i += 2;
      } else {
        b.append(c);
      }
    }
    return b.toString();
  }
}
