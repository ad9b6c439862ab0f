package io.agentnest.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ConfigException;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import io.agentnest.SnapshotCheck;
import io.agentnest.SnapshotException;
import io.agentnest.SnapshotInfo;
import io.agentnest.text.HumanText;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** Saves, lists, restores and removes snapshots. */
@Command(
    name = "snapshot",
    mixinStandardHelpOptions = true,
    description =
        "Snapshots of sandboxes (files and Python session state) in AGENTNEST_HOME/snapshots,"
            + " signed so a tampered or truncated one is refused.",
    subcommands = {
      SnapshotCommand.Ls.class,
      SnapshotCommand.Save.class,
      SnapshotCommand.Restore.class,
      SnapshotCommand.Rm.class
    })
final class SnapshotCommand implements Runnable {
  @Spec CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  static ObjectNode json(SnapshotInfo s) {
    ObjectNode o = CliJson.object().put("name", s.name()).put("created", s.created().toString());
    o.put("image", s.image()).put("image_id", s.imageId()).put("bytes", s.bytes());
    o.put("runtime", s.runtime()).put("memory", s.memory()).put("memory_note", s.memoryNote());
    s.sessions().forEach(o.putArray("sessions")::add);
    return o;
  }

  @Command(
      name = "ls",
      mixinStandardHelpOptions = true,
      description = {
        "List the snapshots, newest first, each with the result of its checks: the manifest's"
            + " signature and each part's presence and size (--verify also hashes every part, as"
            + " a restore does). A snapshot that fails them is listed as TAMPERED with the reason;"
            + " 'agentnest snapshot rm NAME' removes it. Exits 1 when one fails."
      })
  static final class Ls implements Callable<Integer> {
    @Option(names = "--json", description = "Print them as a JSON array.")
    boolean json;

    @Option(names = "--verify", description = "Also hash every part (reads them all).")
    boolean verify;

    @Override
    public Integer call() {
      List<SnapshotCheck> all = Sandbox.checkSnapshots(verify);
      if (json) {
        ArrayNode arr = CliJson.MAPPER.createArrayNode();
        for (SnapshotCheck c : all) {
          SnapshotInfo info = c.info();
          ObjectNode o = info != null ? json(info) : CliJson.object().put("name", c.name());
          o.put("ok", c.ok());
          if (c.problem() != null) {
            o.put("problem", c.problem());
          }
          arr.add(o);
        }
        System.out.println(arr);
      } else {
        System.out.printf(
            "%-32s %-20s %12s  %-9s %s%n", "NAME", "CREATED", "BYTES", "STATUS", "SESSIONS");
        for (SnapshotCheck c : all) {
          SnapshotInfo s = c.info();
          System.out.printf(
              "%-32s %-20s %12s  %-9s %s%n",
              HumanText.text(c.name()),
              s == null
                  ? "-"
                  : s.created().toString().replace("T", " ").replaceAll("\\.\\d+Z$", "Z"),
              s == null ? "-" : Long.toString(s.bytes()),
              c.ok() ? "ok" : "TAMPERED",
              c.ok()
                  ? String.join(",", s == null ? List.of() : s.sessions())
                  : HumanText.text(String.valueOf(c.problem())));
        }
      }
      return all.stream().allMatch(SnapshotCheck::ok) ? ExitCodes.OK : ExitCodes.FAILED;
    }
  }

  @Command(
      name = "save",
      mixinStandardHelpOptions = true,
      description = "Save a running sandbox's files and session state as NAME.")
  static final class Save implements Callable<Integer> {
    @Parameters(index = "0", description = "Sandbox id or unique prefix.")
    String sandbox = "";

    @Parameters(index = "1", description = "Snapshot name: letters, digits, '.', '_', '-'.")
    String name = "";

    @Option(names = "--force", description = "Replace a snapshot of the same name.")
    boolean force;

    @Option(names = "--json", description = "Print the snapshot as JSON.")
    boolean json;

    @Override
    public Integer call() {
      Sandbox sb = Attach.connect(sandbox);
      try {
        SnapshotInfo s = sb.snapshot(name, force);
        System.out.println(
            json ? json(s).toString() : "saved " + s.name() + " (" + s.bytes() + " bytes)");
        return ExitCodes.OK;
      } finally {
        sb.detach();
      }
    }
  }

  @Command(
      name = "restore",
      mixinStandardHelpOptions = true,
      description =
          "Start a new sandbox from snapshot NAME; it keeps running (until its TTL) and its id"
              + " is printed for 'agentnest rm' and the other commands.")
  static final class Restore implements Callable<Integer> {
    @Parameters(index = "0", description = "Snapshot name.")
    String name = "";

    @Option(names = "--json", description = "Print {\"id\":...} as JSON.")
    boolean json;

    @Option(
        names = "--secret-env",
        paramLabel = "NAME",
        split = ",",
        description =
            "Give secret variable NAME again (snapshots never store secret values); its value is"
                + " read from this process's environment variable NAME, never from the command"
                + " line.")
    List<String> secretEnv = new ArrayList<>();

    @Override
    public Integer call() {
      Sandbox sb = secretEnv.isEmpty() ? Sandbox.restore(name) : restoreWithSecrets();
      System.out.println(json ? CliJson.object().put("id", sb.id()).toString() : sb.id());
      sb.detach();
      return ExitCodes.OK;
    }

    private Sandbox restoreWithSecrets() {
      SnapshotInfo info =
          Sandbox.snapshots().stream().filter(s -> s.name().equals(name)).findFirst().orElse(null);
      if (info == null) {
        // Not listed: missing, tampered or corrupt; restore says which.
        return Sandbox.restore(name);
      }
      SandboxConfig.Builder b = info.config().toBuilder();
      for (String n : secretEnv) {
        String value = System.getenv(n);
        if (value == null || value.isEmpty()) {
          throw new ConfigException(
              "--secret-env "
                  + n
                  + ": the environment variable "
                  + n
                  + " is not set; export it before 'agentnest snapshot restore'");
        }
        b.secretEnv(n, Secret.of(value));
      }
      return Sandbox.restore(name, b.build());
    }
  }

  @Command(name = "rm", mixinStandardHelpOptions = true, description = "Remove snapshots.")
  static final class Rm implements Callable<Integer> {
    @Parameters(arity = "1..*", description = "Snapshot names.")
    List<String> names = List.of();

    @Override
    public Integer call() {
      int missing = 0;
      for (String n : names) {
        if (Sandbox.removeSnapshot(n)) {
          System.out.println("removed " + n);
        } else {
          System.err.println("error: no snapshot '" + n + "' ('agentnest snapshot ls')");
          missing++;
        }
      }
      return missing == 0 ? ExitCodes.OK : ExitCodes.NOT_FOUND;
    }
  }

  private SnapshotCommand() {}

  static int exitCodeOf(SnapshotException e) {
    return e.reason() == SnapshotException.Reason.NOT_FOUND
        ? ExitCodes.NOT_FOUND
        : ExitCodes.FAILED;
  }
}
