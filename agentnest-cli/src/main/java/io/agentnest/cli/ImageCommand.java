package io.agentnest.cli;

import io.agentnest.SandboxConfig;
import io.agentnest.docker.BaseImageBuilder;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.Callable;
import me.tongfei.progressbar.ProgressBar;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** Image management. */
@Command(
    name = "image",
    mixinStandardHelpOptions = true,
    description = "Builds sandbox images.",
    subcommands = {ImageCommand.Build.class})
final class ImageCommand implements Runnable {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  @Command(
      name = "build",
      mixinStandardHelpOptions = true,
      description = {
        "Builds the base image offline from Debian packages (mmdebstrap, streamed into the"
            + " engine's image import): no container registry needed. With a registry,"
            + " images/python/Dockerfile builds the same image.",
        "  agentnest image build",
        "  agentnest image build --include python3-numpy,python3-pandas --tag agentnest/python:data"
      })
  static final class Build implements Callable<Integer> {
    @Option(
        names = "--tag",
        description = "Image name (default: ${DEFAULT-VALUE}).",
        defaultValue = SandboxConfig.DEFAULT_IMAGE)
    String tag = SandboxConfig.DEFAULT_IMAGE;

    @Option(names = "--include", split = ",", description = "Extra Debian packages.")
    List<String> include = new ArrayList<>();

    @Option(
        names = "--suite",
        description = "Debian suite (default: ${DEFAULT-VALUE}).",
        defaultValue = "bookworm")
    String suite = "bookworm";

    @Option(names = "--force", description = "Rebuild even if the image exists.")
    boolean force;

    @Override
    public Integer call() {
      if (!force && BaseImageBuilder.exists(tag)) {
        System.out.println(tag + " already exists (use --force to rebuild)");
        return ExitCodes.OK;
      }
      LinkedHashSet<String> pkgs = new LinkedHashSet<>(BaseImageBuilder.BASE_PACKAGES);
      pkgs.addAll(include);
      System.out.println(
          "building " + tag + " from Debian " + suite + " with " + String.join(", ", pkgs));
      String status;
      try (ProgressBar pb = Progress.builder("rootfs", -1).setUnit(" MiB", 1 << 20).build()) {
        status = BaseImageBuilder.build(tag, include, suite, pb::stepTo);
      }
      System.out.println("built " + tag + " (" + status + ")");
      return ExitCodes.OK;
    }
  }
}
