package io.agentnest.cli;

import io.agentnest.Artifact;
import io.agentnest.Sandbox;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** Copies host files into a sandbox. */
@Command(
    name = "upload",
    mixinStandardHelpOptions = true,
    description =
        "Copies a host file or directory (recursively) into a sandbox's workspace; with"
            + " --archive, unpacks a host tar after checking every entry on the host. Refuses"
            + " symlinks pointing outside, special files, tar-slip entries and more than 1 GiB.")
final class UploadCommand implements Callable<Integer> {
  @Parameters(index = "0", description = "Sandbox id or unique prefix.")
  String sandbox = "";

  @Parameters(index = "1", description = "Host file, directory or (with --archive) tar file.")
  Path hostPath = Path.of("");

  @Parameters(index = "2", description = "Destination relative to the workspace.")
  String sandboxPath = "";

  @Option(names = "--archive", description = "HOSTPATH is a tar archive to unpack.")
  boolean archive;

  @Option(names = "--json", description = "Print the uploaded files as a JSON array.")
  boolean json;

  @Override
  public Integer call() {
    Sandbox sb = Attach.connect(sandbox);
    try {
      List<Artifact> out =
          archive ? sb.uploadArchive(hostPath, sandboxPath) : sb.upload(hostPath, sandboxPath);
      ArtifactsCommand.print(out, json);
      return ExitCodes.OK;
    } finally {
      sb.detach();
    }
  }
}
