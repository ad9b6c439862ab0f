package io.agentnest.config;

import io.agentnest.ConfigException;
import io.agentnest.Header;
import io.agentnest.NetworkPolicy;
import io.agentnest.RequestRule;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import io.agentnest.config.YamlTree.Entry;
import io.agentnest.config.YamlTree.ListNode;
import io.agentnest.config.YamlTree.MapNode;
import io.agentnest.config.YamlTree.Node;
import io.agentnest.config.YamlTree.ScalarNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * {@code network.credentials}: a list of credential rules, each for one host, read into {@link
 * NetworkPolicy.Builder#inject}, {@link NetworkPolicy.Builder#placeholder} and {@link
 * NetworkPolicy.Builder#restrict}. Secrets come from the host's environment when the file is
 * loaded, never from the file.
 *
 * <pre>{@code
 * credentials:
 *   - host: api.github.com
 *     header: "Authorization: Bearer ${secret:GITHUB_TOKEN}"
 *     rules: [{methods: [GET], path: /repos/acme/}]
 *   - host: api.openai.com
 *     placeholder: OPENAI_API_KEY
 * }</pre>
 */
final class Credentials {
  static final String EXAMPLE =
      "[{host: api.github.com, header: \"Authorization: Bearer ${secret:GITHUB_TOKEN}\"}]";

  private static final List<String> KEYS =
      List.of("host", "header", "placeholder", "secret", "rules");
  private static final List<String> RULE_KEYS = List.of("methods", "path");
  private static final int MAX_ENTRIES = 256;

  /** One entry, with where it was written (for errors blamed on it). */
  record Credential(
      String host,
      @Nullable Header header,
      @Nullable String placeholder,
      @Nullable Secret placeholderSecret,
      List<RequestRule> rules,
      String where,
      String path) {

    void applyTo(SandboxConfig.Builder b) {
      NetworkPolicy.Builder n = b.currentNetwork().toBuilder();
      Header h = header;
      Secret s = placeholderSecret;
      String env = placeholder;
      if (h != null) {
        n.inject(host, h);
      } else if (env != null && s != null) {
        n.placeholder(host, env, s);
      }
      if (!rules.isEmpty()) {
        n.restrict(host, rules.toArray(new RequestRule[0]));
      }
      b.network(n.build());
    }
  }

  private final String source;
  private final Map<String, String> env;

  Credentials(String source, Map<String, String> env) {
    this.source = source;
    this.env = env;
  }

  List<Credential> parse(Node node, String path) {
    if (!(node instanceof ListNode list)) {
      throw YamlTree.error(
          source,
          node.pos(),
          path,
          "expected a list of credential rules, e.g. credentials: "
              + EXAMPLE
              + "; got a scalar or map");
    }
    if (list.items().size() > MAX_ENTRIES) {
      throw YamlTree.error(
          source, node.pos(), path, "more than " + MAX_ENTRIES + " credential rules: keep fewer");
    }
    List<Credential> entries = new ArrayList<>();
    for (int i = 0; i < list.items().size(); i++) {
      entries.add(entry(list.items().get(i), path + "[" + i + "]"));
    }
    return entries;
  }

  private Credential entry(Node node, String path) {
    if (!(node instanceof MapNode map)) {
      throw YamlTree.error(
          source,
          node.pos(),
          path,
          "expected a map with host and header or placeholder, e.g. "
              + EXAMPLE.substring(1, EXAMPLE.length() - 1));
    }
    Map<String, String> text = new LinkedHashMap<>();
    List<RequestRule> rules = List.of();
    for (Entry e : map.entries().values()) {
      String childPath = YamlTree.child(path, e.key());
      if (!KEYS.contains(e.key())) {
        throw YamlTree.error(
            source,
            e.keyPos(),
            childPath,
            "unknown key" + Suggestions.hint(e.key(), KEYS, "valid keys here"));
      }
      if (e.key().equals("rules")) {
        rules = rules(e.value(), childPath);
      } else {
        text.put(e.key(), scalar(e.value(), childPath, e.key()));
      }
    }
    String where = source + ":" + map.pos().line() + ":" + map.pos().column();
    String host = text.get("host");
    if (host == null || host.isBlank()) {
      throw YamlTree.error(
          source,
          map.pos(),
          path,
          "no host: name the one host the credential is for, e.g. host: api.github.com");
    }
    String header = text.get("header");
    String placeholder = text.get("placeholder");
    if (header != null && placeholder != null) {
      throw YamlTree.error(
          source,
          map.pos(),
          path,
          "give header or placeholder, not both: write a second entry for the same host");
    }
    if (header == null && placeholder == null) {
      throw YamlTree.error(
          source,
          map.pos(),
          path,
          "no credential: add header: \"Authorization: Bearer ${secret:NAME}\" or placeholder: NAME");
    }
    String secretName = text.get("secret");
    try {
      if (header != null) {
        if (secretName != null) {
          throw new ConfigException(
              "secret: goes with placeholder only; a header names its secret as ${secret:NAME}");
        }
        return new Credential(
            host.strip(), Header.parse(header, this::secret), null, null, rules, where, path);
      }
      String env = String.valueOf(placeholder).strip();
      Secret s = secret(secretName == null ? env : secretName.strip());
      return new Credential(host.strip(), null, env, s, rules, where, path);
    } catch (ConfigException e) {
      throw YamlTree.error(source, map.pos(), path, String.valueOf(e.getMessage()));
    }
  }

  private List<RequestRule> rules(Node node, String path) {
    if (!(node instanceof ListNode list) || list.items().isEmpty()) {
      throw YamlTree.error(
          source,
          node.pos(),
          path,
          "expected a list of request rules, e.g. rules: [{methods: [GET], path: /repos/acme/}]");
    }
    List<RequestRule> rules = new ArrayList<>();
    for (int i = 0; i < list.items().size(); i++) {
      Node item = list.items().get(i);
      String itemPath = path + "[" + i + "]";
      if (!(item instanceof MapNode map)) {
        throw YamlTree.error(
            source,
            item.pos(),
            itemPath,
            "expected a map, e.g. {methods: [GET], path: /repos/acme/}");
      }
      Set<String> methods = new LinkedHashSet<>();
      String prefix = null;
      for (Entry e : map.entries().values()) {
        String childPath = YamlTree.child(itemPath, e.key());
        if (!RULE_KEYS.contains(e.key())) {
          throw YamlTree.error(
              source,
              e.keyPos(),
              childPath,
              "unknown key" + Suggestions.hint(e.key(), RULE_KEYS, "valid keys here"));
        }
        if (e.key().equals("path")) {
          prefix = scalar(e.value(), childPath, "path");
        } else if (e.value() instanceof ListNode ms) {
          for (Node m : ms.items()) {
            methods.add(scalar(m, childPath, "methods"));
          }
        } else {
          methods.add(scalar(e.value(), childPath, "methods"));
        }
      }
      if (prefix == null) {
        throw YamlTree.error(
            source, map.pos(), itemPath, "no path: add the path prefix, e.g. path: /repos/acme/");
      }
      try {
        rules.add(new RequestRule(methods, prefix));
      } catch (ConfigException e) {
        throw YamlTree.error(source, map.pos(), itemPath, String.valueOf(e.getMessage()));
      }
    }
    return rules;
  }

  private String scalar(Node node, String path, String key) {
    if (!(node instanceof ScalarNode s) || s.text() == null) {
      throw YamlTree.error(source, node.pos(), path, "expected a string for " + key);
    }
    return s.text();
  }

  /** The host's environment variable {@code name} as a named secret. */
  private Secret secret(String name) {
    return Secret.fromEnv(name, env);
  }

  /** The effective credentials of a policy, as the file would write them. */
  static List<Map<String, Object>> describe(NetworkPolicy p) {
    List<Map<String, Object>> out = new ArrayList<>();
    Set<String> ruled = new LinkedHashSet<>();
    for (NetworkPolicy.Injection i : p.injections()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("host", i.host());
      Header h = i.header();
      m.put(
          "header", h.name() + ": " + h.prefix() + "${secret:" + h.secretName() + "}" + h.suffix());
      rules(p, i.host(), ruled, m);
      out.add(m);
    }
    for (NetworkPolicy.Placeholder ph : p.placeholders()) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("host", ph.host());
      m.put("placeholder", ph.env());
      if (!ph.secretName().equals(ph.env())) {
        m.put("secret", ph.secretName());
      }
      rules(p, ph.host(), ruled, m);
      out.add(m);
    }
    return out;
  }

  private static void rules(
      NetworkPolicy p, String host, Set<String> ruled, Map<String, Object> entry) {
    List<RequestRule> rules = p.requestRules(host);
    if (rules.isEmpty() || !ruled.add(host)) {
      return;
    }
    List<Map<String, Object>> out = new ArrayList<>();
    for (RequestRule r : rules) {
      Map<String, Object> m = new LinkedHashMap<>();
      if (!r.methods().isEmpty()) {
        m.put("methods", r.methods().stream().sorted().toList());
      }
      m.put("path", r.pathPrefix());
      out.add(m);
    }
    entry.put("rules", out);
  }
}
