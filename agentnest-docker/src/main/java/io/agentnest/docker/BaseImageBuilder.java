package io.agentnest.docker;

import io.agentnest.AgentNestException;
import io.agentnest.ConfigException;
import io.agentnest.config.Preset;
import io.agentnest.docker.internal.DockerEngine;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Builds a sandbox base image offline: {@code mmdebstrap} writes a Debian root filesystem as a tar,
 * which is streamed straight into the engine's image import. No container registry needed.
 *
 * <pre>{@code
 * BaseImageBuilder.build("agentnest/python:latest", List.of("python3-numpy"), "bookworm", n -> {});
 * }</pre>
 */
public final class BaseImageBuilder {
  /** Packages every AgentNest base image has. */
  public static final List<String> BASE_PACKAGES =
      List.of("python3", "python3-dill", "ca-certificates", "procps", "coreutils");

  private BaseImageBuilder() {}

  /**
   * Builds the image of {@code preset} (its tag and Debian packages, plus {@code extraPackages}),
   * as {@link #build} does.
   */
  public static String buildPreset(
      Preset preset, List<String> extraPackages, String suite, LongConsumer progress) {
    List<String> pkgs = new ArrayList<>(preset.packages());
    pkgs.addAll(extraPackages);
    return build(preset.image(), pkgs, suite, progress);
  }

  /** Whether the image exists in the engine. */
  public static boolean exists(String tag) {
    return DockerEngine.connect().imageExists(normalise(tag));
  }

  /**
   * Builds {@code tag}; {@code progress} receives the number of root filesystem bytes streamed so
   * far. Returns the engine's final status line.
   */
  public static String build(
      String tag, List<String> extraPackages, String suite, LongConsumer progress) {
    if (!tag.matches("[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9._-]+)?")) {
      throw new ConfigException(
          "image tag '" + tag + "' is not a valid image name, e.g. agentnest/python:latest");
    }
    if (!suite.matches("[a-z]+")) {
      throw new ConfigException("suite '" + suite + "' is not a Debian suite name, e.g. bookworm");
    }
    for (String p : extraPackages) {
      if (!p.matches("[a-z0-9][a-z0-9.+-]+")) {
        throw new ConfigException("'" + p + "' is not a Debian package name");
      }
    }
    String full = normalise(tag);
    String repo = full.substring(0, full.lastIndexOf(':'));
    String version = full.substring(full.lastIndexOf(':') + 1);
    DockerEngine engine = DockerEngine.connect();
    Path mmdebstrap = findOnPath("mmdebstrap");
    if (mmdebstrap == null) {
      throw new ConfigException(
          "mmdebstrap is not installed: 'apt-get install mmdebstrap' (scripts/setup-host.sh does"
              + " it), or build images/python/Dockerfile where a registry is reachable");
    }
    Set<String> pkgs = new LinkedHashSet<>(BASE_PACKAGES);
    pkgs.addAll(extraPackages);
    List<String> cmd = new ArrayList<>();
    cmd.add(mmdebstrap.toString());
    cmd.add("--quiet");
    cmd.add("--variant=essential");
    cmd.add("--include=" + String.join(",", pkgs));
    cmd.add(suite);
    cmd.add("-");
    Process p;
    try {
      p = new ProcessBuilder(cmd).start();
    } catch (IOException e) {
      throw new AgentNestException("cannot run mmdebstrap: " + e.getMessage(), e);
    }
    StringBuilder errText = new StringBuilder();
    Thread errPump =
        new Thread(
            () -> {
              try {
                byte[] b = p.getErrorStream().readNBytes(64 * 1024);
                synchronized (errText) {
                  errText.append(new String(b, StandardCharsets.UTF_8));
                }
                p.getErrorStream().transferTo(OutputStream.nullOutputStream());
              } catch (IOException ignored) {
                // process gone
              }
            },
            "mmdebstrap-stderr");
    errPump.setDaemon(true);
    errPump.start();
    String status;
    try (InputStream tar = new Counting(p.getInputStream(), progress)) {
      status =
          engine.importImage(
              tar,
              repo,
              version,
              List.of(
                  "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                  "ENV LANG=C.UTF-8",
                  "LABEL agentnest.image=python"));
    } catch (IOException e) {
      p.destroyForcibly();
      throw new AgentNestException("image build failed: " + e.getMessage(), e);
    } catch (RuntimeException e) {
      p.destroyForcibly();
      throw e;
    }
    try {
      if (!p.waitFor(10, TimeUnit.MINUTES)) {
        p.destroyForcibly();
        throw new AgentNestException("mmdebstrap did not finish within 10 minutes");
      }
      errPump.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroyForcibly();
      throw new AgentNestException("interrupted while building the image", e);
    }
    if (p.exitValue() != 0) {
      String err;
      synchronized (errText) {
        err = errText.toString().strip();
      }
      // The import may have produced a broken image from a partial tar: remove it.
      try {
        engine.client().removeImageCmd(full).withForce(true).exec();
      } catch (RuntimeException ignored) {
        // nothing was imported
      }
      throw new AgentNestException(
          "mmdebstrap failed with exit "
              + p.exitValue()
              + ": "
              + err
              + " (are Debian's package mirrors reachable?)");
    }
    String[] lines = status.split("\n");
    return shown(lines[lines.length - 1]);
  }

  /** The engine's last import line as a person reads it: {@code image sha256:0123456789ab}. */
  static String shown(String engineLine) {
    Matcher m = IMPORTED.matcher(engineLine);
    return m.find() ? "image " + m.group(1) : engineLine.strip();
  }

  private static final Pattern IMPORTED = Pattern.compile("(sha256:[0-9a-f]{12})[0-9a-f]*");

  private static String normalise(String tag) {
    int slash = tag.lastIndexOf('/');
    return tag.indexOf(':', slash + 1) >= 0 ? tag : tag + ":latest";
  }

  static @Nullable Path findOnPath(String name) {
    List<String> dirs = new ArrayList<>();
    for (String d : System.getenv().getOrDefault("PATH", "").split(":")) {
      if (!d.isEmpty()) {
        dirs.add(d);
      }
    }
    dirs.addAll(List.of("/usr/sbin", "/usr/bin", "/sbin", "/bin"));
    for (String dir : dirs) {
      Path p = Path.of(dir, name);
      if (Files.isExecutable(p)) {
        return p;
      }
    }
    return null;
  }

  private static final class Counting extends FilterInputStream {
    private final LongConsumer progress;
    private long total;

    Counting(InputStream in, LongConsumer progress) {
      super(in);
      this.progress = progress;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      int n = super.read(b, off, len);
      if (n > 0) {
        total += n;
        progress.accept(total);
      }
      return n;
    }
  }
}
