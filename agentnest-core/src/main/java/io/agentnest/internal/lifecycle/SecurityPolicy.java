package io.agentnest.internal.lifecycle;

import io.agentnest.SandboxConfig;
import io.agentnest.SandboxLimit;
import io.agentnest.agent.AgentSources;
import io.agentnest.internal.egress.Interception;
import io.agentnest.internal.egress.JavaTrustStore;
import io.agentnest.internal.snapshot.ConfigCodec;
import io.agentnest.spi.Labels;
import io.agentnest.spi.SandboxSpec;
import io.agentnest.spi.support.AgentNestHome;
import io.agentnest.spi.support.HostProcess;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The policy layer's translation of a {@link SandboxConfig} into the controls a backend must
 * enforce. Backend-agnostic: it names controls, never Docker settings.
 */
public final class SecurityPolicy {
  public static final String VERSION = "0.1.0";

  /** The sandbox-local port of the egress proxy. */
  public static final int EGRESS_PORT = 3128;

  private static final String SECCOMP = loadSeccomp();

  private SecurityPolicy() {}

  public static String seccompProfile() {
    return SECCOMP;
  }

  public static SandboxSpec specFor(SandboxConfig config) {
    Map<String, String> labels = new LinkedHashMap<>(config.labels());
    Instant now = Instant.now();
    labels.put(Labels.MANAGED, "true");
    labels.put(Labels.OWNER, ownerId());
    labels.put(Labels.OWNER_PID, Long.toString(ProcessHandle.current().pid()));
    labels.put(Labels.OWNER_HOST, hostName());
    labels.put(Labels.HOME, AgentNestHome.id());
    labels.put(Labels.CREATED, Long.toString(now.getEpochSecond()));
    labels.put(Labels.EXPIRES, Long.toString(now.plus(config.ttl()).getEpochSecond()));
    labels.put(Labels.VERSION, VERSION);
    labels.putAll(ConfigCodec.toLabels(config));
    if (config.tenant() != null) {
      labels.put(Labels.TENANT, config.tenant());
    }

    Map<String, String> env = new LinkedHashMap<>();
    // A read-only workspace cannot be HOME: programs write caches and history there.
    env.put("HOME", config.readOnlyWorkspace() ? "/tmp" : SandboxConfig.WORKSPACE);
    env.put("LANG", "C.UTF-8");
    env.put("PYTHONDONTWRITEBYTECODE", "1");
    env.put("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    env.put("AGENTNEST_WORKSPACE", SandboxConfig.WORKSPACE);
    env.putAll(config.env());
    // Secret variables are not part of the spec: the engine would store them (SecretDelivery).
    if (!config.network().isNone()) {
      // The only way out: the agent's local proxy port, tunnelled to the host's egress proxy.
      String proxy = "http://127.0.0.1:" + EGRESS_PORT;
      for (String k : new String[] {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"}) {
        env.put(k, proxy);
        env.put(k.toLowerCase(Locale.ROOT), proxy);
      }
      env.put("NO_PROXY", "localhost,127.0.0.1,::1");
      env.put("no_proxy", "localhost,127.0.0.1,::1");
      if (config.network().hasCredentials()) {
        // The agent writes this bundle (the system's CAs and the sandbox's own) before anything
        // runs; the proxy presents certificates of that CA for hosts with credential rules.
        for (String k : Interception.TRUST_VARIABLES) {
          env.putIfAbsent(k, Interception.BUNDLE_PATH);
        }
        // Java reads none of those: the agent also writes a PKCS12 store, and every JVM picks
        // this up (each prints "Picked up JAVA_TOOL_OPTIONS: ..." on stderr, as the JVM does).
        env.put(
            JavaTrustStore.TOOL_OPTIONS_VARIABLE,
            JavaTrustStore.javaToolOptions(env.get(JavaTrustStore.TOOL_OPTIONS_VARIABLE)));
      }
    }

    Map<String, Long> tmpfs = new LinkedHashMap<>();
    tmpfs.put("/tmp", config.tmpSizeBytes());
    if (!config.readOnlyWorkspace()) {
      // Otherwise /workspace is the image's directory on the read-only root: the kernel refuses
      // every write to it, from the agent too.
      tmpfs.put(SandboxConfig.WORKSPACE, config.workspaceSizeBytes());
    }

    String seccomp = config.seccompProfile() != null ? config.seccompProfile() : SECCOMP;
    return SandboxSpec.builder()
        .image(config.image())
        .runtime(config.runtime())
        .command("python3", "-u", "-c", AgentSources.bootstrap())
        .user(config.user())
        .env(env)
        // The engine creates the working directory: a read-only workspace then exists even when
        // the image has none.
        .workdir(config.readOnlyWorkspace() ? SandboxConfig.WORKSPACE : "/")
        .labels(labels)
        .cpus(config.cpus())
        .memoryBytes(config.memoryBytes())
        .pidsLimit(config.pidsLimit())
        .tmpfs(tmpfs)
        .readOnlyRootFilesystem(config.readOnlyRootFilesystem())
        .seccompProfileJson(seccomp)
        .openFilesLimit(config.limit(SandboxLimit.OPEN_FILES))
        .gpus(config.gpus())
        .build();
  }

  /**
   * Identifies this host process ({@link HostProcess#ownerId}); kept here for the sandbox code that
   * records owners through the policy layer.
   */
  public static String ownerId() {
    return HostProcess.ownerId();
  }

  /** {@link HostProcess#hostName}. */
  public static String hostName() {
    return HostProcess.hostName();
  }

  private static String loadSeccomp() {
    try (InputStream in = SecurityPolicy.class.getResourceAsStream("seccomp.json")) {
      if (in == null) {
        throw new IllegalStateException("seccomp.json missing from agentnest-core");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
