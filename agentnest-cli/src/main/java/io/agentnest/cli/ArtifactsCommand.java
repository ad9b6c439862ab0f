package io.agentnest.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.Artifact;
import io.agentnest.Sandbox;
import io.agentnest.text.HumanText;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** Lists and exports files a sandbox produced. */
@Command(
    name = "artifacts",
    mixinStandardHelpOptions = true,
    description =
        "Lists the regular files in a sandbox's workspace matching a glob (output/**.png), with"
            + " size and sha256 computed on the host; with --export, copies them to a host"
            + " directory. Symlinks, devices and hostile archive entries are refused.")
final class ArtifactsCommand implements Callable<Integer> {
  @Parameters(index = "0", description = "Sandbox id or unique prefix.")
  String sandbox = "";

  @Parameters(index = "1", description = "Glob relative to the workspace, e.g. 'output/**.png'.")
  String glob = "";

  @Option(names = "--export", paramLabel = "DIR", description = "Copy the files into DIR.")
  @Nullable Path export;

  @Option(names = "--json", description = "Print the files as a JSON array.")
  boolean json;

  @Override
  public Integer call() {
    Sandbox sb = Attach.connect(sandbox);
    try {
      List<Artifact> out = export == null ? sb.artifacts(glob) : sb.exportArtifacts(glob, export);
      print(out, json);
      return ExitCodes.OK;
    } finally {
      sb.detach();
    }
  }

  static void print(List<Artifact> out, boolean json) {
    if (json) {
      ArrayNode arr = CliJson.MAPPER.createArrayNode();
      for (Artifact a : out) {
        ObjectNode o = arr.addObject().put("path", a.path()).put("size", a.size());
        o.put("sha256", a.sha256());
        if (a.hostPath() != null) {
          o.put("host_path", a.hostPath().toString());
        }
      }
      System.out.println(arr);
      return;
    }
    for (Artifact a : out) {
      // File names are the sandbox's choice: shown escaped, so none can rewrite the listing.
      System.out.printf(
          "%-64s %12d  %s%s%n",
          HumanText.line(a.path()),
          a.size(),
          a.sha256(),
          a.hostPath() == null ? "" : "  -> " + HumanText.line(a.hostPath().toString()));
    }
    System.out.println(
        out.size() + " files, " + out.stream().mapToLong(Artifact::size).sum() + " bytes");
  }
}
