package io.agentnest.cli;

import io.agentnest.ConfigException;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * Secret environment variables: set in the sandbox, masked in everything that comes out. A value on
 * the command line is in the host's process list for every local user to read, so the forms that
 * keep it off the command line come first: from this process's environment, from a file, or from
 * stdin.
 */
final class SecretOptions {
  /** Longest secret value read from a file or stdin. */
  static final int MAX_VALUE_BYTES = 64 * 1024;

  @Option(
      names = "--secret-env",
      paramLabel = "NAME",
      description =
          "Secret environment variable NAME, its value taken from this process's environment"
              + " (repeatable).")
  List<String> secretEnv = new ArrayList<>();

  @Option(
      names = "--secret-file",
      paramLabel = "NAME=FILE",
      description =
          "Secret environment variable NAME, its value read from FILE (one trailing newline"
              + " dropped); FILE '-' reads it from stdin (repeatable).")
  List<String> secretFiles = new ArrayList<>();

  @Option(
      names = "--secret",
      paramLabel = "NAME=VALUE",
      description =
          "Secret environment variable with its value on the command line: visible to every"
              + " local user in the process list, so refused without a terminal and warned about"
              + " with one; use --secret-env or --secret-file.")
  List<String> secrets = new ArrayList<>();

  /** {@code stdinFree}: false when stdin carries something else (the MCP stdio protocol). */
  SandboxConfig applyTo(SandboxConfig config, boolean stdinFree) {
    return applyTo(config, stdinFree, System.console() != null, System.in, System.err);
  }

  SandboxConfig applyTo(
      SandboxConfig config,
      boolean stdinFree,
      boolean terminal,
      InputStream stdin,
      PrintStream err) {
    if (secrets.isEmpty() && secretEnv.isEmpty() && secretFiles.isEmpty()) {
      return config;
    }
    SandboxConfig.Builder b = config.toBuilder();
    for (String s : secrets) {
      String name = nameOf("--secret", s, "NAME=VALUE");
      String fix =
          " puts the value of "
              + name
              + " in the host's process list, where every local user can read it; use"
              + " --secret-env "
              + name
              + " (export it first) or --secret-file "
              + name
              + "=FILE instead";
      if (!terminal) {
        throw new ConfigException("--secret " + name + "=..." + fix);
      }
      err.println("warning: --secret " + name + "=..." + fix);
      b.secretEnv(name, secret("--secret " + name, s.substring(s.indexOf('=') + 1)));
    }
    for (String name : secretEnv) {
      String v = System.getenv(name);
      if (v == null) {
        throw new ConfigException(
            "--secret-env " + name + ": no such variable in this environment; export it first");
      }
      b.secretEnv(name, secret("--secret-env " + name, v));
    }
    boolean stdinUsed = false;
    for (String s : secretFiles) {
      String name = nameOf("--secret-file", s, "NAME=FILE");
      String file = s.substring(s.indexOf('=') + 1);
      String what = "--secret-file " + name + "=" + file;
      byte[] value;
      if (file.equals("-")) {
        if (!stdinFree) {
          throw new ConfigException(
              what + ": stdin carries the MCP protocol here; give a file, or use --secret-env");
        }
        if (stdinUsed) {
          throw new ConfigException(what + ": stdin can give one secret only; use files");
        }
        stdinUsed = true;
        value = readBounded(what, stdin);
      } else {
        try (InputStream in = Files.newInputStream(Path.of(file))) {
          value = readBounded(what, in);
        } catch (IOException e) {
          throw new ConfigException(
              what + ": cannot read the file (" + e.getMessage() + "); give a readable file");
        }
      }
      b.secretEnv(name, secret(what, withoutNewline(new String(value, StandardCharsets.UTF_8))));
    }
    return b.build();
  }

  private static String nameOf(String option, String arg, String form) {
    int eq = arg.indexOf('=');
    if (eq <= 0) {
      throw new ConfigException(
          option + " '" + arg.replaceAll("=.*", "=...") + "' must be " + form);
    }
    return arg.substring(0, eq);
  }

  private static Secret secret(String what, String value) {
    try {
      return Secret.of(value);
    } catch (ConfigException e) {
      throw new ConfigException(what + ": " + e.getMessage());
    }
  }

  private static byte[] readBounded(String what, InputStream in) {
    try {
      byte[] b = in.readNBytes(MAX_VALUE_BYTES + 1);
      if (b.length > MAX_VALUE_BYTES) {
        throw new ConfigException(
            what + ": longer than " + MAX_VALUE_BYTES + " bytes; a secret is a short value");
      }
      return b;
    } catch (IOException e) {
      throw new ConfigException(what + ": cannot read it (" + e.getMessage() + ")");
    }
  }

  private static String withoutNewline(String v) {
    if (v.endsWith("\r\n")) {
      return v.substring(0, v.length() - 2);
    }
    return v.endsWith("\n") ? v.substring(0, v.length() - 1) : v;
  }
}
