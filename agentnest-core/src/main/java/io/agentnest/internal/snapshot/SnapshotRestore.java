package io.agentnest.internal.snapshot;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.SnapshotException;
import io.agentnest.internal.context.SandboxContext;
import io.agentnest.internal.context.SandboxStarts;
import io.agentnest.internal.state.SandboxState;
import io.agentnest.internal.support.Bounded;
import io.agentnest.spi.RuntimeBackend;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Restoring a verified snapshot: the checks against the config asked for (image, secret variables,
 * the image id the engine has now), then the process memory where the runtime can restore it, else
 * the files and pickled sessions streamed into a fresh sandbox.
 */
final class SnapshotRestore {
  private static final Logger LOG = LoggerFactory.getLogger(SnapshotRestore.class);

  private SnapshotRestore() {}

  /**
   * Starts a sandbox from snapshot {@code name}. With {@code overrides} null, the saved config is
   * used; a snapshot saved with secret environment variables needs them supplied in {@code
   * overrides}. The manifest's signature and every part's size and sha256 are checked before a
   * sandbox is created; the parts are hashed again while they stream into it.
   */
  static Sandbox restore(
      Loaded l,
      String name,
      @Nullable SandboxConfig overrides,
      Function<String, RuntimeBackend> backends,
      Path privateDir,
      SandboxStarts starts) {
    SandboxConfig config = overrides != null ? overrides : Manifest.savedConfig(l.manifest(), name);
    String savedImage = l.manifest().path("image").asText();
    if (!config.image().equals(savedImage)) {
      throw new SnapshotException(
          SnapshotException.Reason.IMAGE_CHANGED,
          "snapshot '"
              + name
              + "' was taken on image '"
              + savedImage
              + "', the config asks for '"
              + config.image()
              + "': restore with the same image");
    }
    List<String> secrets = new ArrayList<>();
    l.manifest().path("config").path("secret_env_names").forEach(n -> secrets.add(n.asText()));
    List<String> missing =
        secrets.stream().filter(n -> !config.secretEnv().containsKey(n)).toList();
    if (!missing.isEmpty()) {
      throw new SnapshotException(
          SnapshotException.Reason.NEEDS_CONFIG,
          "snapshot '"
              + name
              + "' was taken with secret environment variables "
              + missing
              + ", which are never written to disk: pass them again with"
              + " Sandbox.restore(name, info.config().toBuilder().secretEnv(...).build()), where"
              + " info is the snapshot's SnapshotInfo from Sandbox.snapshots(); on the command"
              + " line, export them and add --secret-env "
              + String.join(",", missing));
    }
    RuntimeBackend backend = backends.apply(config.backend());
    checkImageId(name, l.manifest(), backend.imageId(config.image()));
    Parts.verifyAll(l);
    long t0 = System.nanoTime();
    boolean memory = l.manifest().path("memory").asBoolean();
    String whyNot = null;
    if (memory) {
      if (!backend.checkpointsMemory(config)) {
        whyNot =
            "the config asks for backend "
                + config.backend()
                + " with runtime "
                + (config.runtime() == null ? "runc (the default)" : config.runtime())
                + ", which cannot restore process memory (a gVisor checkpoint restores only on"
                + " gVisor, a microVM guest's only on the microvm backend)";
      } else if (!config.secretEnv().isEmpty()
          || !config.env().equals(Manifest.savedConfig(l.manifest(), name).env())) {
        whyNot =
            "the config sets other environment variables than the saved sandbox had, and its"
                + " processes' environment is part of the saved memory";
      } else {
        try {
          SandboxContext sb = CheckpointMemory.restore(backend, privateDir, l, config, starts);
          if (sb != null) {
            try {
              restoredAudit(sb, l, t0, true, null);
            } catch (RuntimeException e) {
              sb.sandbox().destroy();
              throw e;
            }
            return sb.sandbox();
          }
          whyNot = CheckpointMemory.NO_ENGINE_RESTORE;
        } catch (SnapshotException e) {
          throw e;
        } catch (RuntimeException e) {
          whyNot =
              "the backend could not restore the checkpoint: "
                  + Bounded.text(String.valueOf(e.getMessage()), 500);
        }
      }
      LOG.warn(
          "snapshot '{}': process memory not restored ({}); restoring its files and pickled"
              + " Python sessions instead",
          name,
          whyNot);
    }
    SandboxContext sb = starts.create(config);
    try {
      restoreInto(sb, l);
      restoredAudit(sb, l, t0, false, memory ? whyNot : null);
      return sb.sandbox();
    } catch (RuntimeException e) {
      sb.sandbox().destroy();
      throw e;
    }
  }

  private static void restoredAudit(
      SandboxContext sb, Loaded l, long t0, boolean memoryRestored, @Nullable String whyNot) {
    Map<String, Object> d = new LinkedHashMap<>();
    d.put("snapshot", l.manifest().path("name").asText());
    d.put("from_sandbox", l.manifest().path("sandbox").asText("unknown"));
    d.put("bytes", l.manifest().path("bytes").asLong());
    d.put("millis", Duration.ofNanos(System.nanoTime() - t0).toMillis());
    d.put("memory_restored", memoryRestored);
    if (whyNot != null) {
      d.put("memory_reason", whyNot);
    }
    sb.audit("snapshot.restored", d);
  }

  /** Refuses a restore when the image under the saved name is no longer the one saved. */
  static void checkImageId(String name, JsonNode manifest, Optional<String> now) {
    String savedImage = manifest.path("image").asText();
    String savedId = manifest.path("image_id").asText();
    String nowId = now.orElse("(none: the engine has no such image)");
    if (!savedId.equals(nowId)) {
      throw new SnapshotException(
          SnapshotException.Reason.IMAGE_CHANGED,
          "image '"
              + savedImage
              + "' changed since snapshot '"
              + name
              + "' was taken (then "
              + savedId
              + ", now "
              + nowId
              + "): its files were saved relative to that image; tag the old image back"
              + " (docker tag "
              + savedId
              + " "
              + savedImage
              + "), or take a new snapshot on the new image");
    }
  }

  /** Streams the verified parts of {@code l} into a fresh sandbox, hashing them again. */
  static void restoreInto(SandboxContext sb, Loaded l) {
    String name = l.manifest().path("name").asText();
    JsonNode ws = l.part("workspace");
    JsonNode tmp = l.part("tmp");
    try (Parts.PartReader w = ws == null ? null : Parts.PartReader.open(l.dir(), ws, name);
        Parts.PartReader t = tmp == null ? null : Parts.PartReader.open(l.dir(), tmp, name)) {
      SandboxState.restoreFiles(sb, w, t);
      if (w != null) {
        w.finish();
      }
      if (t != null) {
        t.finish();
      }
    } catch (IOException e) {
      throw Manifest.corrupt(name, "has an unreadable part: " + e.getMessage());
    }
    for (JsonNode p : l.manifest().path("parts")) {
      if (p.path("kind").asText().equals("session")) {
        byte[] data = Parts.readPart(l.dir(), p);
        if (data.length > 0) {
          JsonNode meta = p.path("meta");
          SandboxState.loadSession(
              sb, meta.path("session").asText(), meta.path("extra_bytes").asLong(), data);
        }
      }
    }
  }
}
