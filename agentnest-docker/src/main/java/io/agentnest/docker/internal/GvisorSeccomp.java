package io.agentnest.docker.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The seccomp profile as gVisor gets it. With {@code --oci-seccomp} runsc applies the OCI profile
 * inside its Sentry, with two differences from runc that break sandboxes (seen with runsc 20221219,
 * Debian 12):
 *
 * <ul>
 *   <li>It ignores a rule's {@code errnoRet}: every refusal answers EPERM. The profile answers
 *       clone3 with ENOSYS, the one errno on which glibc falls back to clone (where the namespace
 *       flags can be checked); with EPERM no thread can start. Under gVisor clone3 is let through
 *       to the Sentry, which does not implement it there (ENOSYS) or handles it itself: it never
 *       reaches the host kernel, which is what the rule protects on runc.
 *   <li>It looks rule names up in its own system call table, where some x86_64 calls have other
 *       names; a name it does not know is dropped, so the call falls to the default (EPERM).
 *       pselect6 (what glibc's select() uses) is "pselect" there.
 * </ul>
 */
final class GvisorSeccomp {
  /**
   * The adapted default profile as a file, next to core's {@code seccomp.json}: what Kubernetes
   * nodes install for gVisor RuntimeClasses (GvisorSeccompTest keeps it equal to {@link #adapt}).
   */
  static final String GVISOR_PROFILE_RESOURCE =
      "/io/agentnest/internal/lifecycle/seccomp-gvisor.json";

  private static final String CLONE3 = "clone3";
  // Linux name -> gVisor's name for the same x86_64/arm64 system call.
  private static final Map<String, String> GVISOR_NAMES = Map.of("pselect6", "pselect");
  // The profile is the host's own (core's or the user's), not sandbox output: default limits do.
  private static final ObjectMapper JSON = new ObjectMapper();

  private GvisorSeccomp() {}

  /** {@code profileJson} for {@code runtime} (the daemon's name); unchanged except for runsc. */
  static String adapt(String profileJson, @Nullable String runtime) {
    if (runtime == null || !runtime.contains("runsc")) {
      return profileJson;
    }
    JsonNode root;
    try {
      root = JSON.readTree(profileJson);
    } catch (IOException e) {
      return profileJson; // the engine names what is wrong with it
    }
    if (root == null || !root.path("syscalls").isArray()) {
      return profileJson;
    }
    ArrayNode rules = (ArrayNode) root.path("syscalls");
    boolean changed = addGvisorNames(rules);
    boolean refused = false;
    for (int i = rules.size() - 1; i >= 0; i--) {
      JsonNode rule = rules.get(i);
      if (!"SCMP_ACT_ERRNO".equals(rule.path("action").asText()) || !rule.path("names").isArray()) {
        continue;
      }
      ArrayNode names = (ArrayNode) rule.path("names");
      for (int j = names.size() - 1; j >= 0; j--) {
        if (CLONE3.equals(names.get(j).asText())) {
          names.remove(j);
          refused = true;
        }
      }
      if (names.isEmpty()) {
        rules.remove(i);
      }
    }
    if (refused) {
      ObjectNode allow = rules.addObject();
      allow.putArray("names").add(CLONE3);
      allow.put("action", "SCMP_ACT_ALLOW");
      allow.put("comment", "gVisor: the Sentry answers clone3 itself (see GvisorSeccomp)");
    }
    return refused || changed ? root.toString() : profileJson;
  }

  /** Adds gVisor's name next to each Linux name it spells differently; true if any was added. */
  private static boolean addGvisorNames(ArrayNode rules) {
    boolean added = false;
    for (JsonNode rule : rules) {
      if (!rule.path("names").isArray()) {
        continue;
      }
      ArrayNode names = (ArrayNode) rule.path("names");
      List<String> have = new ArrayList<>();
      names.forEach(n -> have.add(n.asText()));
      for (String name : List.copyOf(have)) {
        String alias = GVISOR_NAMES.get(name);
        if (alias != null && !have.contains(alias)) {
          names.add(alias);
          have.add(alias);
          added = true;
        }
      }
    }
    return added;
  }
}
