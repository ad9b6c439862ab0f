package io.agentnest.cli;

import io.agentnest.ConfigException;
import io.agentnest.SandboxConfig;
import io.agentnest.docker.internal.DockerEngine;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** Image management. */
@Command(
    name = "image",
    mixinStandardHelpOptions = true,
    description = "Builds sandbox images.",
    subcommands = {ImageCommand.Build.class})
final class ImageCommand implements Runnable {
  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  /** Packages every AgentNest base image has. */
  static final List<String> BASE_PACKAGES =
      List.of("python3", "python3-dill", "ca-certificates", "procps", "coreutils");

  @Command(
      name = "build",
      mixinStandardHelpOptions = true,
      description = {
        "Builds the base image offline from Debian packages (mmdebstrap, then docker import):"
            + " no container registry needed. Users with a registry can use"
            + " images/python/Dockerfile instead.",
        "  agentnest image build",
        "  agentnest image build --include python3-numpy,python3-pandas --tag agentnest/python:data"
      })
  static final class Build implements Callable<Integer> {
    @Option(names = "--tag", description = "Image name (default: ${DEFAULT-VALUE}).",
        defaultValue = SandboxConfig.DEFAULT_IMAGE)
    String tag = SandboxConfig.DEFAULT_IMAGE;

    @Option(names = "--include", split = ",", description = "Extra Debian packages, comma-separated.")
    List<String> include = new ArrayList<>();

    @Option(names = "--suite", description = "Debian suite (default: ${DEFAULT-VALUE}).",
        defaultValue = "bookworm")
    String suite = "bookworm";

    @Option(names = "--force", description = "Rebuild even if the image exists.")
    boolean force;

    @Override
    public Integer call() throws IOException, InterruptedException {
      if (!tag.matches("[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9._-]+)?")) {
        throw new ConfigException("--tag '" + tag + "' is not a valid image name, e.g. agentnest/python:latest");
      }
      for (String p : include) {
        if (!p.matches("[a-z0-9][a-z0-9.+-]+")) {
          throw new ConfigException("--include '" + p + "' is not a Debian package name");
        }
      }
      String repo = tag.contains(":") ? tag.substring(0, tag.lastIndexOf(':')) : tag;
      String version = tag.contains(":") ? tag.substring(tag.lastIndexOf(':') + 1) : "latest";
      DockerEngine engine = DockerEngine.connect();
      if (!force && engine.imageExists(repo + ":" + version)) {
        System.out.println(repo + ":" + version + " already exists (use --force to rebuild)");
        return ExitCodes.OK;
      }
      Path mmdebstrap = findOnPath("mmdebstrap");
      if (mmdebstrap == null) {
        throw new ConfigException(
            "mmdebstrap is not installed: 'apt-get install mmdebstrap' (or run"
                + " scripts/setup-host.sh), or build images/python/Dockerfile with a registry");
      }
      Set<String> pkgs = new LinkedHashSet<>(BASE_PACKAGES);
      pkgs.addAll(include);
      List<String> cmd =
          List.of(
              mmdebstrap.toString(), "--quiet", "--variant=essential",
              "--include=" + String.join(",", pkgs), suite, "-");
      System.out.println("building " + repo + ":" + version + " from Debian " + suite
          + " with " + String.join(", ", pkgs));
      Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.PIPE).start();
      StringBuilder errText = new StringBuilder();
      Thread errPump =
          new Thread(() -> errText.append(drain(p.getErrorStream())), "mmdebstrap-stderr");
      errPump.setDaemon(true);
      errPump.start();
      String status;
      try (ProgressBar pb =
              new ProgressBarBuilder()
                  .setTaskName("rootfs")
                  .setInitialMax(-1)
                  .setUnit(" MiB", 1 << 20)
                  .setStyle(ProgressBarStyle.ASCII)
                  .setConsumer(new me.tongfei.progressbar.ConsoleProgressBarConsumer(System.err))
                  .build();
          InputStream tar = new Counting(p.getInputStream(), pb)) {
        status =
            engine.importImage(
                tar,
                repo,
                version,
                List.of(
                    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                    "ENV LANG=C.UTF-8",
                    "LABEL agentnest.image=python"));
      }
      if (!p.waitFor(10, TimeUnit.MINUTES)) {
        p.destroyForcibly();
        throw new IOException("mmdebstrap did not finish in 10 minutes");
      }
      errPump.join(5000);
      if (p.exitValue() != 0) {
        throw new IOException(
            "mmdebstrap failed with exit " + p.exitValue() + ": " + errText.toString().strip()
                + " (are the Debian mirrors reachable?)");
      }
      System.out.println("built " + repo + ":" + version + " (" + lastLine(status) + ")");
      return ExitCodes.OK;
    }

    private static String lastLine(String s) {
      String[] lines = s.split("\n");
      return lines[lines.length - 1];
    }

    private static String drain(InputStream in) {
      try {
        byte[] b = in.readNBytes(64 * 1024);
        in.transferTo(OutputStreamNull.INSTANCE);
        return new String(b, StandardCharsets.UTF_8);
      } catch (IOException e) {
        return "";
      }
    }
  }

  static @org.jspecify.annotations.Nullable Path findOnPath(String name) {
    String path = System.getenv().getOrDefault("PATH", "/usr/bin:/bin");
    for (String dir : path.split(":")) {
      Path p = Path.of(dir, name);
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    for (String dir : List.of("/usr/sbin", "/usr/bin", "/sbin", "/bin")) {
      Path p = Path.of(dir, name);
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    return null;
  }

  /** Counts bytes into the progress bar as the tar streams through. */
  static final class Counting extends FilterInputStream {
    private final ProgressBar pb;

    Counting(InputStream in, ProgressBar pb) {
      super(in);
      this.pb = pb;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      int n = super.read(b, off, len);
      if (n > 0) {
        pb.stepBy(n);
      }
      return n;
    }
  }

  static final class OutputStreamNull extends java.io.OutputStream {
    static final OutputStreamNull INSTANCE = new OutputStreamNull();

    @Override
    public void write(int b) {}

    @Override
    public void write(byte[] b, int off, int len) {}
  }
}
