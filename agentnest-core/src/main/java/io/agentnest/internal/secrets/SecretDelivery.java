package io.agentnest.internal.secrets;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ConfigException;
import io.agentnest.SandboxConfig;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.channel.Ops;
import io.agentnest.internal.egress.JavaTrustStore;
import io.agentnest.internal.support.Json;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;

/**
 * Secret environment variables travel to the sandbox's agent over its channel, as the first frame
 * after the bootstrap, never in the container's configuration: the engine stores that on disk
 * ({@code /var/lib/docker/containers/ID/config.v2.json}) and shows it to anyone who may inspect
 * containers. The agent reads the frame before it answers anything, so no command or session ever
 * runs without the secrets, and hands them to the commands and sessions it starts, keeping them out
 * of its own process environment.
 */
public final class SecretDelivery {
  /** What the agent accepts (agent.py MAX_SECRETS, MAX_SECRET_BYTES). */
  static final int MAX_SECRETS = 256;

  static final int MAX_BYTES = 1 << 20;

  private final byte[] payload;

  private SecretDelivery(byte[] payload) {
    this.payload = payload;
  }

  /** The init frame's payload for {@code config}; refuses what the agent would not take. */
  public static SecretDelivery of(SandboxConfig config) {
    return of(config, false, Map.of());
  }

  /**
   * The init frame for {@code config} plus {@code extra} variables (the placeholders of credential
   * rules: not secret, but fresh per sandbox, so they travel with the secrets).
   */
  public static SecretDelivery of(SandboxConfig config, Map<String, String> extra) {
    return of(config, false, extra);
  }

  /**
   * The init frame of a pooled sandbox at hand-out: its plain environment variables travel with the
   * secrets, since the container was started before its user was known (the agent gives both to
   * every command and session it starts).
   */
  public static SecretDelivery forHandOut(SandboxConfig config) {
    return of(config, true, Map.of());
  }

  /** {@link #forHandOut(SandboxConfig)} plus {@code extra} variables (placeholders). */
  public static SecretDelivery forHandOut(SandboxConfig config, Map<String, String> extra) {
    return of(config, true, extra);
  }

  private static SecretDelivery of(
      SandboxConfig config, boolean withEnv, Map<String, String> extra) {
    for (String name : extra.keySet()) {
      if (config.env().containsKey(name) || config.secretEnv().containsKey(name)) {
        throw new ConfigException(
            "'"
                + name
                + "' is both a placeholder of network.credentials and an environment variable:"
                + " keep one");
      }
    }
    int count = config.secretEnv().size() + extra.size() + (withEnv ? config.env().size() : 0);
    if (count > MAX_SECRETS) {
      throw new ConfigException(
          count
              + (withEnv ? " environment variables (plain and secret)" : " secret variables")
              + ": a sandbox takes at most "
              + MAX_SECRETS
              + "; pass fewer, or put several values into one file in the workspace");
    }
    ObjectNode env = Json.object();
    if (withEnv) {
      config.env().forEach(env::put);
      String javaOptions = config.env().get(JavaTrustStore.TOOL_OPTIONS_VARIABLE);
      if (javaOptions != null && config.network().hasCredentials()) {
        // A pooled member's spec has only our options: the user's value sent here replaces
        // them, so it goes with ours appended, as SecurityPolicy#specFor does.
        env.put(JavaTrustStore.TOOL_OPTIONS_VARIABLE, JavaTrustStore.javaToolOptions(javaOptions));
      }
    }
    config.secretEnv().forEach((name, secret) -> env.put(name, secret.reveal()));
    extra.forEach(env::put);
    byte[] bytes;
    try {
      bytes = Json.MAPPER.writeValueAsBytes(Json.object().set("env", env));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot encode the secret variables", e);
    }
    if (bytes.length > MAX_BYTES) {
      Arrays.fill(bytes, (byte) 0);
      throw new ConfigException(
          "the secret variables' values take "
              + bytes.length
              + " bytes: at most "
              + MAX_BYTES
              + " go to a sandbox; upload larger secrets as files instead");
    }
    return new SecretDelivery(bytes);
  }

  /** Sends the init frame; the agent answers {@code ready} only after it has read it. */
  public void send(AgentChannel channel) {
    try {
      channel.send(Json.object().put(Ops.OP, Ops.OP_INIT), payload);
    } finally {
      Arrays.fill(payload, (byte) 0); // one copy fewer in the heap (Strings keep theirs)
    }
  }

  /** For tests: the payload's text. */
  String payloadText() {
    return new String(payload, StandardCharsets.UTF_8);
  }
}
