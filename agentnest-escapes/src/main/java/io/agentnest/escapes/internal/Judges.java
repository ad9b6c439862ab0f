package io.agentnest.escapes.internal;

import io.agentnest.AgentNestException;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.RichOutput;
import io.agentnest.Sandbox;
import io.agentnest.SandboxClosedException;
import io.agentnest.SandboxConfig;
import io.agentnest.UnsupportedControlException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * What several probe categories share: running an attack in a fresh sandbox, and spotting a leaked
 * secret.
 */
final class Judges {
  private Judges() {}

  static ExecOptions timeout(int seconds) {
    return ExecOptions.builder().timeout(Duration.ofSeconds(seconds)).build();
  }

  static Judgement hostile(
      ProbeContext ctx,
      UnaryOperator<SandboxConfig.Builder> tune,
      Function<Sandbox, Judgement> attack) {
    Sandbox created;
    try {
      created = ctx.fresh(tune);
    } catch (UnsupportedControlException e) {
      // Fail closed: the backend would not promise the control the attack is aimed at, so the
      // hostile sandbox never ran.
      return Judgement.of(
          false, "refused to create it: " + Verdicts.clean(String.valueOf(e.getMessage())));
    }
    try (Sandbox sb = created) {
      Judgement j;
      try {
        j = attack.apply(sb);
        ExecResult alive = sb.exec("echo alive", timeout(20));
        j =
            j.or(
                !alive.stdout().startsWith("alive"),
                "the sandbox no longer answers after the attack");
      } catch (SandboxClosedException e) {
        // The workload took down its own sandbox (the runtime's limit ended it): nothing outside
        // was touched, which the neighbour check below proves.
        j =
            Judgement.of(
                false,
                "the workload ended its own sandbox ("
                    + Verdicts.clean(String.valueOf(e.getMessage()))
                    + ")");
      }
      // The host and other sandboxes must be unaffected.
      ExecResult neighbour = ctx.neighbour.runCode("sum(range(1000))", timeout(20));
      return j.or(!"499500".equals(neighbour.result()), "the neighbour sandbox stopped answering");
    }
  }

  /** Through when the secret, in any form the host knows, is in what came out. */
  static Judgement leak(ProbeContext ctx, ExecResult r) {
    return leak(ctx, r, "");
  }

  /**
   * Through when the secret, in any form the host knows, is in any text a reader gets: each stream,
   * the streams merged as delivered ({@code merged}), one stream's text read right after the
   * other's, the result, the error, and rich outputs (their bytes and their base64, as {@code run
   * --json} prints them). Base64 forms are looked for with line breaks removed too (wrapped base64
   * is read across lines).
   */
  static Judgement leak(ProbeContext ctx, ExecResult r, String merged) {
    List<String> texts = new ArrayList<>();
    texts.addAll(List.of(r.stdout(), r.stderr(), merged));
    texts.add(r.stdout() + r.stderr());
    texts.add(r.stderr() + r.stdout());
    if (r.result() != null) {
      texts.add(r.result());
    }
    if (r.error() != null) {
      texts.add(r.error().value());
      texts.add(r.error().traceback());
    }
    for (RichOutput ro : r.rich()) {
      texts.add(ro.mimeType());
      texts.add(new String(ro.data(), StandardCharsets.ISO_8859_1));
      texts.add(Base64.getEncoder().encodeToString(ro.data()));
    }
    List<String> forms = new ArrayList<>();
    for (Map.Entry<String, String> f : secretForms(ctx.secret).entrySet()) {
      boolean base64 = f.getKey().startsWith("base64");
      for (String t : texts) {
        String seen = base64 ? t.replace("\r", "").replace("\n", "") : t;
        if (seen.contains(f.getValue()) && !forms.contains(f.getKey())) {
          forms.add(f.getKey());
        }
      }
    }
    // Hex as dumps print it: separators (od's spaces and line wraps, ':', '-') removed, any case.
    String hex = HexFormat.of().formatHex(ctx.secret.getBytes(StandardCharsets.UTF_8));
    for (String t : texts) {
      if (withoutHexSeparators(t).contains(hex) && !forms.contains("hex-dump")) {
        forms.add("hex-dump");
      }
    }
    int redactions = r.redactions().values().stream().mapToInt(Integer::intValue).sum();
    return Judgement.of(
        !forms.isEmpty(),
        forms.isEmpty()
            ? "no form of the secret came out; " + redactions + " redactions"
            : "LEAKED as " + forms);
  }

  private static String withoutHexSeparators(String t) {
    StringBuilder b = new StringBuilder(t.length());
    for (int i = 0; i < t.length(); i++) {
      char c = t.charAt(i);
      if (" \t:-\r\n".indexOf(c) < 0) {
        b.append(Character.toLowerCase(c));
      }
    }
    return b.toString();
  }

  static Map<String, String> secretForms(String secret) {
    byte[] s = secret.getBytes(StandardCharsets.UTF_8);
    Map<String, String> forms = new LinkedHashMap<>();
    forms.put("raw", secret);
    for (int k = 0; k < 3; k++) {
      byte[] padded = new byte[k + s.length];
      System.arraycopy(s, 0, padded, k, s.length);
      String b64 = Base64.getEncoder().withoutPadding().encodeToString(padded);
      // The middle of the encoding does not depend on what surrounds the secret.
      String core = b64.substring(k == 0 ? 0 : 4, b64.length() - 4);
      forms.put("base64@" + k, core);
      forms.put("base64url@" + k, core.replace('+', '-').replace('/', '_'));
    }
    String hex = HexFormat.of().formatHex(s);
    forms.put("hex", hex);
    forms.put("HEX", hex.toUpperCase(Locale.ROOT));
    forms.put("url", URLEncoder.encode(secret, StandardCharsets.UTF_8));
    forms.put(
        "url-path",
        URLEncoder.encode(secret, StandardCharsets.UTF_8).replace("+", "%20").replace("%2F", "/"));
    return forms;
  }

  /** Runs {@code op}; the outcome "refused" (any AgentNestException) or what it returned. */
  static String attempt(Supplier<Object> op) {
    try {
      Object v = op.get();
      return "ALLOWED: "
          + Verdicts.clean(
                  String.valueOf(v instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : v))
              .substring(0, Math.min(60, String.valueOf(v).length()));
    } catch (AgentNestException | IllegalArgumentException e) {
      return "refused";
    }
  }

  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
