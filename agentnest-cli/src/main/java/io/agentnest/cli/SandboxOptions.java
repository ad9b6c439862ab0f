package io.agentnest.cli;

import io.agentnest.SandboxConfig;
import io.agentnest.internal.Sizes;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine.Option;

/** Sandbox options shared by commands that create one. */
final class SandboxOptions {
  @Option(
      names = "--image",
      description = "Image to run (default: ${DEFAULT-VALUE}).",
      defaultValue = SandboxConfig.DEFAULT_IMAGE)
  String image = SandboxConfig.DEFAULT_IMAGE;

  @Option(names = "--runtime", description = "OCI runtime: runc, gvisor, or a registered one.")
  @Nullable String runtime;

  @Option(names = "--memory", description = "Memory limit, e.g. 512m, 2g.")
  @Nullable String memory;

  @Option(names = "--cpus", description = "CPU limit in cores, e.g. 1.5.")
  @Nullable Double cpus;

  @Option(names = "--pids", description = "Maximum number of processes.")
  @Nullable Long pids;

  @Option(names = "--timeout", description = "Wall-time limit per execution, e.g. 30s, 2m, 500ms.")
  @Nullable String timeout;

  @Option(names = "--max-output", description = "Cap on output bytes per execution, e.g. 10m.")
  @Nullable String maxOutput;

  SandboxConfig toConfig() {
    SandboxConfig.Builder b = SandboxConfig.builder().image(image).runtime(runtime);
    if (memory != null) {
      b.memory(memory);
    }
    if (cpus != null) {
      b.cpus(cpus);
    }
    if (pids != null) {
      b.pidsLimit(pids);
    }
    if (timeout != null) {
      b.execTimeout(Durations.parse("--timeout", timeout));
    }
    if (maxOutput != null) {
      b.maxOutputBytes(Sizes.parse("--max-output", maxOutput));
    }
    return b.build();
  }

  @Nullable Duration timeoutOrNull() {
    return timeout == null ? null : Durations.parse("--timeout", timeout);
  }
}
