package io.agentnest.escapes.internal;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.NetworkEvent;
import io.agentnest.NetworkPolicy;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;

/**
 * What the probes of one backend share: the target sandbox (with an egress allowlist, so the proxy
 * path is attacked too, and a secret to leak), a neighbour sandbox to reach, and a host listener.
 */
public final class ProbeContext implements AutoCloseable {
  public static final String SECRET_VAR = "AGENTNEST_PROBE_SECRET";
  static final String SCRIPT = "/workspace/.agentnest-escapes/probes.py";
  static final String ALLOWED_HOST = "allowed.agentnest-probe.example";
  private static final ExecOptions SCRIPT_TIMEOUT =
      ExecOptions.builder().timeout(Duration.ofSeconds(60)).build();

  final SandboxConfig base;
  final String backend;
  final List<String> engineRoots;
  final String secret;
  final String marker;
  final String abstractName;
  final String neighbourFile;
  final List<NetworkEvent> events = new CopyOnWriteArrayList<>();
  final HostListener listener;
  final Sandbox target;
  final Sandbox neighbour;

  public ProbeContext(SandboxConfig base, String backend, List<String> engineRoots)
      throws IOException {
    this.base = base;
    this.backend = backend;
    this.engineRoots = List.copyOf(engineRoots);
    SecureRandom rnd = new SecureRandom();
    byte[] b = new byte[12];
    rnd.nextBytes(b);
    String token = HexFormat.of().formatHex(b);
    // Characters that change under base64, hex and URL encoding, so every form is checked.
    this.secret = "anp-" + token.substring(0, 12) + "/+=&" + token.substring(12);
    this.marker = "agentnest-neighbour-" + token.substring(0, 8);
    this.abstractName = "agentnest-probe-" + token.substring(8, 16);
    this.neighbourFile = "/tmp/" + marker;
    this.listener = new HostListener();
    Sandbox t = null;
    Sandbox n = null;
    try {
      t =
          Sandbox.create(
              base.toBuilder()
                  .label("escape-suite", "target")
                  .secretEnv(SECRET_VAR, Secret.of(secret))
                  .network(NetworkPolicy.allowlist(ALLOWED_HOST))
                  .onNetworkEvent(events::add)
                  .build());
      n = Sandbox.create(base.toBuilder().label("escape-suite", "neighbour").build());
      t.files().write(SCRIPT.substring("/workspace/".length()), probesScript());
      // The neighbour holds an abstract socket, a /tmp file and a marked process for the
      // target to look for.
      n.runCode(
          "import socket, subprocess, sys\n"
              + "_s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
              + "_s.bind('\\0"
              + abstractName
              + "')\n"
              + "_s.listen(1)\n"
              + "open('"
              + neighbourFile
              + "', 'w').write('neighbour')\n"
              + "_p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(900)', '"
              + marker
              + "'])\n");
    } catch (RuntimeException e) {
      if (t != null) {
        t.close();
      }
      if (n != null) {
        n.close();
      }
      listener.close();
      throw e;
    }
    this.target = t;
    this.neighbour = n;
  }

  static byte[] probesScript() {
    try (InputStream in =
        ProbeContext.class.getResourceAsStream("/io/agentnest/escapes/probes.py")) {
      if (in == null) {
        throw new IllegalStateException("probes.py is missing from the agentnest-escapes jar");
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Runs the in-sandbox probe {@code id} with {@code args}; null when it printed no verdict. */
  Judgement script(String id, Map<String, ?> args) {
    String json;
    try {
      json = ProbeJson.MAPPER.writeValueAsString(args);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    ExecResult r = target.exec(List.of("python3", SCRIPT, id, json), SCRIPT_TIMEOUT);
    return Verdicts.parse(r.stdout()).orElseThrow(() -> new ProbeBroken(Verdicts.noVerdict(r)));
  }

  /** A fresh sandbox on this backend, for probes that break what they run in. */
  Sandbox fresh(UnaryOperator<SandboxConfig.Builder> tune) {
    return Sandbox.create(tune.apply(base.toBuilder().label("escape-suite", "hostile")).build());
  }

  public String backend() {
    return backend;
  }

  @Override
  public void close() {
    try {
      target.close();
    } finally {
      try {
        neighbour.close();
      } finally {
        try {
          listener.close();
        } catch (IOException ignored) {
          // the port is released with the process anyway
        }
      }
    }
  }

  /** A probe that could not reach a verdict; reported as {@code ERROR}. */
  static final class ProbeBroken extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ProbeBroken(String message) {
      super(message);
    }
  }
}
