package io.agentnest.docker;

import io.agentnest.ExecOptions;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Starts a main class of the test classpath in a separate JVM, as another host process would. */
public final class ChildJvm {
  private ChildJvm() {}

  public static Process start(Class<?> main, Map<String, String> env, String... args)
      throws IOException {
    return start(main, List.of(), env, args);
  }

  /** {@link #start(Class, Map, String...)} with options for the JVM itself (e.g. -Xmx96m). */
  public static Process start(
      Class<?> main, List<String> jvmOptions, Map<String, String> env, String... args)
      throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(ProcessHandle.current().info().command().orElse("java"));
    cmd.addAll(jvmOptions);
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(main.getName());
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD);
    pb.environment().putAll(env);
    return pb.start();
  }

  /** Reads lines until one starts with {@code prefix}; bounded by {@code maxLines}. */
  public static List<String> readUntil(Process p, String prefix, int maxLines) throws IOException {
    BufferedReader r =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < maxLines; i++) {
      String line = r.readLine();
      if (line == null) {
        break;
      }
      lines.add(line);
      if (line.startsWith(prefix)) {
        break;
      }
    }
    return lines;
  }

  /**
   * A host process that attaches to a running sandbox and starts a streaming command in it,
   * printing a line per output chunk, then waits (at most two minutes) to be killed mid-exec. Args:
   * sandbox id, command.
   */
  public static final class MidExecClient {
    public static void main(String[] args) throws InterruptedException {
      Sandbox sb = Sandbox.connect(args[0]);
      sb.execAsync(
          args[1],
          ExecOptions.builder()
              .timeout(Duration.ofMinutes(2))
              .onOutput(
                  c -> {
                    System.out.println("out " + c.text().strip());
                    System.out.flush();
                  })
              .build());
      Thread.sleep(120_000);
    }
  }

  /**
   * A host process that creates sandboxes and then just waits (at most two minutes), so a test can
   * kill it with SIGKILL while it holds them. Args: count, ttl seconds.
   */
  public static final class SandboxOwner {
    public static void main(String[] args) throws InterruptedException {
      int n = Integer.parseInt(args[0]);
      long ttl = Long.parseLong(args[1]);
      for (int i = 0; i < n; i++) {
        Sandbox sb =
            Sandbox.create(
                SandboxConfig.builder()
                    .ttl(Duration.ofSeconds(ttl))
                    .label("test", "owner-process")
                    .build());
        System.out.println("sandbox " + sb.id());
      }
      System.out.println("ready");
      System.out.flush();
      Thread.sleep(120_000);
    }
  }
}
