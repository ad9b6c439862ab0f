package io.agentnest.cli;

import io.agentnest.ConfigException;
import io.agentnest.RemoteServer;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** Creates a sandbox that outlives this process, for exec, code, shell and the file commands. */
@Command(
    name = "create",
    mixinStandardHelpOptions = true,
    description = {
      "Creates a sandbox that keeps running after this command exits (until its TTL, 'agentnest"
          + " rm' or 'agentnest prune' after it expired) and prints its id. Run code in it with"
          + " exec, code and shell; move files with upload and artifacts; keep it longer with"
          + " extend; see what ran in it with logs.",
      "  id=$(agentnest create --ttl 2h)",
      "  agentnest exec $id -- ls -la",
      "  agentnest code $id -c 'x = 41'; agentnest code $id -c 'x + 1'",
      "  agentnest rm $id"
    })
final class CreateCommand implements Callable<Integer> {
  @Option(
      names = "--ttl",
      paramLabel = "DURATION",
      description =
          "How long the sandbox lives, e.g. 30m, 2h, 1d (default: the configuration's, else 30m);"
              + " 'agentnest extend' adds more later.")
  @Nullable String ttl;

  @Option(
      names = "--json",
      description = "Print {\"id\":..., \"expires_at\":..., \"image\":...} as one JSON object.")
  boolean json;

  @Mixin SandboxOptions sandbox = new SandboxOptions();

  @Override
  public Integer call() {
    if (sandbox.approvals.given()) {
      throw new ConfigException(
          "--guard and --approve belong to the commands that run code, not to the sandbox (a"
              + " sandbox carries no approval rules): give them to 'agentnest exec', 'code' or"
              + " 'shell'");
    }
    SandboxConfig.Builder b = sandbox.toConfig().toBuilder();
    if (ttl != null) {
      b.ttl(Durations.parse("--ttl", ttl));
    }
    SandboxConfig config = b.build();
    Optional<RemoteServer> remote = RemoteServer.fromEnvironment(System.getenv());
    if (remote.isPresent()) {
      config = RunCommand.remoteConfig(remote.get(), config);
    } else {
      refuseWhatDiesWithThisProcess(config);
    }
    Sandbox sb = Sandbox.create(config);
    String id = sb.id();
    Instant expires = sb.expiresAt();
    // Not destroyed at exit: detached, its owner becomes "detached", so prune spares it until
    // its expiry, which the agent inside enforces on its own.
    sb.detach();
    if (json) {
      System.out.println(
          CliJson.object()
              .put("id", id)
              .put("expires_at", expires.toString())
              .put("image", config.image())
              .put("backend", remote.isPresent() ? "remote" : config.backend()));
    } else {
      System.out.println(id);
      System.err.println(
          "agentnest: sandbox "
              + Attach.short12(id)
              + " runs until "
              + expires
              + " ("
              + human(Duration.between(Instant.now(), expires))
              + "); 'agentnest rm "
              + Attach.short12(id)
              + "' ends it");
    }
    return ExitCodes.OK;
  }

  /**
   * What a sandbox made here needs from this process after it exits cannot be had: the egress proxy
   * runs in the process that made the sandbox, secret values are masked by it (a later handle does
   * not know them), and later commands attach on Docker only. Refused, not degraded.
   */
  private static void refuseWhatDiesWithThisProcess(SandboxConfig config) {
    if (!config.backend().equals("docker")) {
      throw new ConfigException(
          "agentnest create: backend '"
              + config.backend()
              + "' is not supported yet: exec, code, shell and the file commands reattach on"
              + " Docker only; use --backend docker, or 'agentnest serve' with AGENTNEST_URL set");
    }
    if (!config.network().isNone()) {
      throw new ConfigException(
          "agentnest create: a network allowlist ("
              + String.join(", ", config.network().rules())
              + ") needs the egress proxy of the process that made the sandbox, and 'create'"
              + " exits: drop --allow (and the configuration's network: rules), use 'agentnest"
              + " run --allow ...', or 'agentnest serve' with AGENTNEST_URL set");
    }
    if (!config.secretEnv().isEmpty()) {
      throw new ConfigException(
          "agentnest create: secret variables ("
              + String.join(", ", config.secretEnv().keySet())
              + ") are masked in the output by the process that made the sandbox, and 'create'"
              + " exits, so later commands would print them in clear: use 'agentnest run"
              + " --secret-env NAME', or drop the configuration's secrets");
    }
  }

  static String human(Duration d) {
    long s = Math.max(0, d.toSeconds());
    if (s >= 86_400) {
      return (s / 86_400) + "d " + (s % 86_400 / 3600) + "h";
    }
    if (s >= 3600) {
      return (s / 3600) + "h " + (s % 3600 / 60) + "m";
    }
    return (s / 60) + "m " + (s % 60) + "s";
  }
}
