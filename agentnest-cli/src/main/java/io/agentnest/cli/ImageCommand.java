package io.agentnest.cli;

import io.agentnest.ConfigException;
import io.agentnest.SandboxConfig;
import io.agentnest.config.Preset;
import io.agentnest.config.Presets;
import io.agentnest.docker.BaseImageBuilder;
import io.agentnest.microvm.MicrovmImageBuilder;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.concurrent.Callable;
import me.tongfei.progressbar.ProgressBar;
import org.jspecify.annotations.Nullable;
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
        "  agentnest image build --include python3-numpy,python3-pandas \\",
        "      --tag agentnest/python:data",
        "  agentnest image build --preset data   (also browser, gpu, or your own preset)",
        "  agentnest image build --microvm       (kernel, initramfs and root disk for the",
        "                                         microvm backend)"
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

    @Option(
        names = "--preset",
        paramLabel = "NAME",
        description =
            "Build the image of a preset (data, browser, gpu, or one under"
                + " $AGENTNEST_HOME/presets): its tag and Debian packages, plus --include.")
    @Nullable String preset;

    @Option(
        names = "--microvm",
        description =
            "Build a microVM guest image (Debian's cloud kernel, an initramfs and a read-only ext4"
                + " root disk, under $AGENTNEST_HOME/microvm/images) instead of a container image.")
    boolean microvm;

    @CommandLine.Spec CommandLine.Model.CommandSpec buildSpec;

    @Override
    public Integer call() {
      if (microvm) {
        return buildMicrovm();
      }
      if (preset != null) {
        return buildPreset(Presets.get(preset));
      }
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

    private int buildMicrovm() {
      String image = tag;
      List<String> pkgs = new ArrayList<>(include);
      if (preset != null) {
        if (buildSpec.commandLine().getParseResult().hasMatchedOption("--tag")) {
          throw new ConfigException("--tag and --preset: a preset's image is named by its profile");
        }
        Preset p = Presets.get(preset);
        image = p.image();
        pkgs.addAll(0, p.packages());
      }
      if (!force && MicrovmImageBuilder.exists(image)) {
        System.out.println(
            image
                + " (microVM) already exists in "
                + MicrovmImageBuilder.directory(image)
                + " (use --force to rebuild)");
        return ExitCodes.OK;
      }
      System.out.println("building microVM image " + image + " from Debian " + suite);
      long started = System.nanoTime();
      String[] steps = {"root filesystem", "root disk", "kernel", "initramfs", "built"};
      try (ProgressBar pb = Progress.builder("microvm", steps.length).build()) {
        MicrovmImageBuilder.build(
            image,
            pkgs,
            suite,
            stage -> {
              pb.setExtraMessage(stage.length() > 60 ? stage.substring(0, 60) : stage);
              for (int i = 0; i < steps.length; i++) {
                if (stage.startsWith(steps[i])) {
                  pb.stepTo(i + 1L);
                }
              }
            });
      }
      System.out.printf(
          "built microVM image %s in %s (%.0f s)%n",
          image, MicrovmImageBuilder.directory(image), (System.nanoTime() - started) / 1e9);
      return ExitCodes.OK;
    }

    private int buildPreset(Preset p) {
      if (buildSpec.commandLine().getParseResult().hasMatchedOption("--tag")) {
        throw new ConfigException(
            "--tag and --preset: a preset's image is named by its profile (" + p.image() + ")");
      }
      String image = p.image();
      if (!force && BaseImageBuilder.exists(image)) {
        System.out.println(
            image + " (preset " + p.name() + ") already exists (use --force to rebuild)");
        return ExitCodes.OK;
      }
      LinkedHashSet<String> pkgs = new LinkedHashSet<>(BaseImageBuilder.BASE_PACKAGES);
      pkgs.addAll(p.packages());
      pkgs.addAll(include);
      System.out.println(
          "building "
              + image
              + " (preset "
              + p.name()
              + ", from "
              + p.source()
              + ") from Debian "
              + suite
              + " with "
              + String.join(", ", pkgs));
      String status;
      try (ProgressBar pb = Progress.builder("rootfs", -1).setUnit(" MiB", 1 << 20).build()) {
        status = BaseImageBuilder.buildPreset(p, include, suite, pb::stepTo);
      }
      System.out.println("built " + image + " (" + status + ")");
      return ExitCodes.OK;
    }
  }
}
