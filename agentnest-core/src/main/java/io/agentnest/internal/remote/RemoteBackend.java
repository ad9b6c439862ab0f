package io.agentnest.internal.remote;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.ConfigException;
import io.agentnest.RemoteServer;
import io.agentnest.SandboxInfo;
import io.agentnest.SandboxNotFoundException;
import io.agentnest.UnsupportedControlException;
import io.agentnest.spi.BackendSandbox;
import io.agentnest.spi.HealthCheck;
import io.agentnest.spi.ManagedResource;
import io.agentnest.spi.RuntimeBackend;
import io.agentnest.spi.SandboxSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The {@code remote} backend: sandboxes on an {@code agentnest serve} server, named by
 * AGENTNEST_URL and AGENTNEST_API_KEY (or the system properties {@code agentnest.url} and {@code
 * agentnest.api-key}). The server runs the agent and holds the policy, so this backend never starts
 * an agent itself: {@code Sandbox.create} with {@code backend("remote")} makes a {@link
 * RemoteSandbox}; here are the tenant's listing, lookup and removal for {@code ls}, {@code rm} and
 * {@code prune}.
 */
public final class RemoteBackend implements RuntimeBackend {
  public static final String NAME = "remote";

  @Override
  public String name() {
    return NAME;
  }

  /** The server this process is configured for, from the environment or system properties. */
  public static Optional<RemoteServer> configured() {
    Optional<RemoteServer> env = RemoteServer.fromEnvironment(System.getenv());
    if (env.isPresent()) {
      return env;
    }
    Map<String, String> props = new HashMap<>();
    String url = System.getProperty("agentnest.url");
    String key = System.getProperty("agentnest.api-key");
    if (url != null) {
      props.put(RemoteServer.ENV_URL, url);
    }
    if (key != null) {
      props.put(RemoteServer.ENV_API_KEY, key);
    }
    return RemoteServer.fromEnvironment(props);
  }

  public static RemoteServer server() {
    return configured()
        .orElseThrow(
            () ->
                new ConfigException(
                    "backend 'remote' needs a server: export AGENTNEST_URL and AGENTNEST_API_KEY"
                        + " (`agentnest tenant add` prints a key), or use"
                        + " SandboxConfig.builder().remote(url, key)"));
  }

  /**
   * Refuses: a remote server makes its sandboxes from its own policy, not from a spec this host
   * wrote. A spec that weakens a hardening control is refused naming the control first.
   */
  @Override
  public BackendSandbox create(SandboxSpec spec) {
    spec.requireHardened(NAME);
    throw new UnsupportedControlException(
        "the remote backend does not start sandboxes from a SandboxSpec: the server builds them"
            + " from its own policy; use Sandbox.create(SandboxConfig.builder().backend(\"remote\")"
            + "...)");
  }

  @Override
  public BackendSandbox attach(String id) {
    throw new UnsupportedControlException(
        "the remote backend does not attach to an agent: the server holds the channel; call the"
            + " sandbox through Sandbox.create or the HTTP API");
  }

  @Override
  public List<SandboxInfo> list() {
    RemoteClient c = new RemoteClient(server());
    List<SandboxInfo> out = new ArrayList<>();
    for (JsonNode s : c.get("/v1/sandboxes").path("sandboxes")) {
      out.add(info(s));
    }
    return out;
  }

  @Override
  public Optional<SandboxInfo> inspect(String id) {
    RemoteClient c = new RemoteClient(server());
    try {
      return Optional.of(info(c.get("/v1/sandboxes/" + RemoteClient.q(id))));
    } catch (SandboxNotFoundException gone) {
      return Optional.empty();
    }
  }

  @Override
  public void destroy(String id) {
    RemoteClient c = new RemoteClient(server());
    try {
      c.bytes("DELETE", "/v1/sandboxes/" + RemoteClient.q(id), new byte[0], null, WAIT);
    } catch (SandboxNotFoundException gone) {
      // already gone
    }
  }

  @Override
  public List<ManagedResource> resources() {
    List<ManagedResource> out = new ArrayList<>();
    for (SandboxInfo i : list()) {
      out.add(
          new ManagedResource("sandbox", i.id(), i.id(), i.state(), i.created(), 0, i.labels()));
    }
    return out;
  }

  @Override
  public void remove(ManagedResource resource) {
    destroy(resource.id());
  }

  @Override
  public List<HealthCheck> diagnose() {
    Optional<RemoteServer> s;
    try {
      s = configured();
    } catch (ConfigException e) {
      return List.of(
          HealthCheck.fail(
              "remote server", String.valueOf(e.getMessage()), "fix AGENTNEST_URL/KEY"));
    }
    if (s.isEmpty()) {
      return List.of();
    }
    try {
      JsonNode t = new RemoteClient(s.get()).get("/v1/tenant");
      return List.of(
          HealthCheck.ok(
              "remote server", s.get().url() + " answers; tenant " + t.path("name").asText()));
    } catch (RuntimeException e) {
      return List.of(
          HealthCheck.fail(
              "remote server",
              String.valueOf(e.getMessage()),
              "check AGENTNEST_URL, AGENTNEST_API_KEY and that `agentnest serve` runs"));
    }
  }

  private static final Duration WAIT = Duration.ofSeconds(60);

  static SandboxInfo info(JsonNode s) {
    Map<String, String> labels = new HashMap<>();
    s.path("labels").fields().forEachRemaining(f -> labels.put(f.getKey(), f.getValue().asText()));
    return new SandboxInfo(
        s.path("id").asText(),
        NAME,
        s.path("image").asText(),
        s.path("runtime").isTextual()
            ? s.path("runtime").asText()
            : labels.getOrDefault("agentnest.runtime", "runc"),
        "running",
        Instant.parse(s.path("createdAt").asText()),
        labels);
  }
}
