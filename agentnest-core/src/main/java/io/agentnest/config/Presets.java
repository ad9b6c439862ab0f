package io.agentnest.config;

import io.agentnest.ConfigException;
import io.agentnest.spi.support.AgentNestHome;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * The presets: {@code data}, {@code browser} and {@code gpu} ship with AgentNest; a user adds or
 * replaces one with a directory {@code $AGENTNEST_HOME/presets/<name>/} holding {@code
 * profile.yaml} (an AgentNest config file: {@code version: 1}, {@code defaults:}) and {@code
 * packages} (Debian packages of its image, one a line, {@code #} comments).
 */
public final class Presets {
  /** The presets that ship with AgentNest. */
  public static final List<String> BUILT_IN = List.of("data", "browser", "gpu");

  public static final String PROFILE_FILE = "profile.yaml";
  public static final String PACKAGES_FILE = "packages";

  private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9-]{0,31}");
  private static final Pattern PACKAGE = Pattern.compile("[a-z0-9][a-z0-9.+-]+");
  private static final int MAX_FILE = 64 * 1024;

  private Presets() {}

  /** Where a user's own presets live. */
  public static Path userDir() {
    return AgentNestHome.dir().resolve("presets");
  }

  /** Every preset name: the built-in ones and the user's, sorted. */
  public static Set<String> names() {
    Set<String> out = new TreeSet<>(BUILT_IN);
    Path dir = userDir();
    if (Files.isDirectory(dir)) {
      try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
        for (Path p : ds) {
          String n = p.getFileName().toString();
          if (NAME.matcher(n).matches() && Files.isRegularFile(p.resolve(PROFILE_FILE))) {
            out.add(n);
          }
        }
      } catch (IOException e) {
        throw new ConfigException("cannot list the presets in " + dir + ": " + e.getMessage());
      }
    }
    return out;
  }

  /**
   * The preset {@code name}: the user's directory of that name if there is one, else the built-in.
   *
   * @throws ConfigException for an unknown or malformed preset, naming the known ones or the file
   */
  public static Preset get(String name) {
    if (name == null || !NAME.matcher(name).matches()) {
      throw new ConfigException(
          "preset name '"
              + name
              + "' is invalid: lower-case letters, digits and '-', e.g. data; known: "
              + names());
    }
    Path dir = userDir().resolve(name);
    if (Files.isRegularFile(dir.resolve(PROFILE_FILE))) {
      Path packages = dir.resolve(PACKAGES_FILE);
      return preset(
          name,
          dir.toString(),
          readFile(dir.resolve(PROFILE_FILE)),
          Files.isRegularFile(packages) ? readFile(packages) : "");
    }
    String profile = resource(name + "/" + PROFILE_FILE);
    if (profile == null) {
      String near =
          Suggestions.nearest(name, names()).map(n -> "; did you mean '" + n + "'?").orElse("");
      throw new ConfigException(
          "no preset '"
              + name
              + "'"
              + near
              + " known: "
              + names()
              + "; add your own as "
              + dir.resolve(PROFILE_FILE)
              + " (+ "
              + PACKAGES_FILE
              + ")");
    }
    String packages = resource(name + "/" + PACKAGES_FILE);
    return preset(name, "preset " + name, profile, packages == null ? "" : packages);
  }

  private static Preset preset(String name, String source, String profile, String packages) {
    List<String> pkgs = new ArrayList<>();
    String[] lines = packages.split("\n", -1);
    for (int i = 0; i < lines.length; i++) {
      String line = lines[i];
      int hash = line.indexOf('#');
      String p = (hash >= 0 ? line.substring(0, hash) : line).strip();
      if (p.isEmpty()) {
        continue;
      }
      if (!PACKAGE.matcher(p).matches()) {
        throw new ConfigException(
            source
                + "/"
                + PACKAGES_FILE
                + ":"
                + (i + 1)
                + ": '"
                + p
                + "' is not a Debian package name: one package a line, e.g. python3-numpy");
      }
      pkgs.add(p);
    }
    Preset preset = new Preset(name, source, profile, pkgs);
    // Validated now: a broken preset fails where it is named, not at sandbox creation.
    preset.sandboxConfig();
    return preset;
  }

  private static String readFile(Path p) {
    try {
      if (Files.size(p) > MAX_FILE) {
        throw new ConfigException(p + " is over " + MAX_FILE + " bytes: is it the right file?");
      }
      return Files.readString(p, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new ConfigException("cannot read " + p + ": " + e.getMessage());
    }
  }

  private static @Nullable String resource(String path) {
    try (InputStream in = Presets.class.getResourceAsStream("/io/agentnest/presets/" + path)) {
      return in == null ? null : new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new ConfigException("cannot read preset resource " + path + ": " + e.getMessage());
    }
  }
}
