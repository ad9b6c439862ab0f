package io.agentnest.cli;

import io.agentnest.ConfigException;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/** Secret environment variables: set in the sandbox, masked in everything that comes out. */
final class SecretOptions {
  @Option(
      names = "--secret",
      description = "Secret environment variable NAME=VALUE: set in the sandbox, masked in output.")
  List<String> secrets = new ArrayList<>();

  @Option(
      names = "--secret-env",
      description = "Secret environment variable taken from this host's environment variable NAME.")
  List<String> secretEnv = new ArrayList<>();

  SandboxConfig applyTo(SandboxConfig config) {
    if (secrets.isEmpty() && secretEnv.isEmpty()) {
      return config;
    }
    SandboxConfig.Builder b = config.toBuilder();
    for (String s : secrets) {
      int eq = s.indexOf('=');
      if (eq <= 0) {
        throw new ConfigException(
            "--secret '" + s.replaceAll("=.*", "=...") + "' must be NAME=VALUE");
      }
      b.secretEnv(s.substring(0, eq), Secret.of(s.substring(eq + 1)));
    }
    for (String name : secretEnv) {
      String v = System.getenv(name);
      if (v == null) {
        throw new ConfigException(
            "--secret-env " + name + ": no such variable in this environment; export it first");
      }
      b.secretEnv(name, Secret.of(v));
    }
    return b.build();
  }
}
