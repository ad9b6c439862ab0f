package io.agentnest.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.agentnest.ConfigException;
import io.agentnest.NetworkPolicy;
import io.agentnest.NetworkPolicy.Mode;
import io.agentnest.SandboxBudgets;
import io.agentnest.SandboxConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class AgentNestConfigTest {
  static final String SECCOMP = "{\"defaultAction\": \"SCMP_ACT_ERRNO\"}";

  static final String FULL =
      """
      version: 1
      defaults:
        backend: docker
        image: example/python:3
        runtime: gvisor
        user: "1000:1000"
        workdir: project
        env: {MODE: test, LEVEL: "2"}
        labels:
          team: search
        limits:
          cpus: 1.5
          memory: 1g
          pids: 128
          tmp_size: 32m
          workspace_size: 2g
          exec_timeout: 500ms
          max_output: 1m
          ttl: 1d
          start_timeout: 2m
        security:
          read_only_root: false
          seccomp_profile: profiles/seccomp.json
        network:
          mode: none
      profiles:
        data:
          image: example/python:data
          env: {MODE: data}
          labels: {size: big}
          limits:
            memory: 4g
            exec_timeout: 1h
        gvisor:
          runtime: runsc
          security: {read_only_root: true}
      """;

  static SandboxConfig parse(String yaml) {
    return AgentNestConfig.parse(yaml, "agentnest.yaml").sandboxConfig();
  }

  static String errorOf(String yaml) {
    try {
      AgentNestConfig.parse(yaml, "agentnest.yaml");
    } catch (ConfigException e) {
      return e.getMessage();
    }
    throw new AssertionError("expected a ConfigException for:\n" + yaml);
  }

  static Path writeFull(Path dir) throws Exception {
    Files.createDirectories(dir.resolve("profiles"));
    Files.writeString(dir.resolve("profiles/seccomp.json"), SECCOMP);
    Path file = dir.resolve("agentnest.yaml");
    Files.writeString(file, FULL);
    return file;
  }

  @Test
  void fullConfigMapsOntoEverySandboxConfigField(@TempDir Path dir) throws Exception {
    AgentNestConfig config = AgentNestConfig.load(writeFull(dir), Map.of());
    SandboxConfig c = config.sandboxConfig();

    assertThat(config.source()).contains(dir.resolve("agentnest.yaml"));
    assertThat(config.profiles()).containsExactly("data", "gvisor");
    assertThat(c.backend()).isEqualTo("docker");
    assertThat(c.image()).isEqualTo("example/python:3");
    assertThat(c.runtime()).isEqualTo("gvisor");
    assertThat(c.user()).isEqualTo("1000:1000");
    assertThat(c.workdir()).isEqualTo("project");
    assertThat(c.env()).containsExactlyInAnyOrderEntriesOf(Map.of("MODE", "test", "LEVEL", "2"));
    assertThat(c.labels()).containsExactlyEntriesOf(Map.of("team", "search"));
    assertThat(c.cpus()).isEqualTo(1.5);
    assertThat(c.memoryBytes()).isEqualTo(1L << 30);
    assertThat(c.pidsLimit()).isEqualTo(128);
    assertThat(c.tmpSizeBytes()).isEqualTo(32L << 20);
    assertThat(c.workspaceSizeBytes()).isEqualTo(2L << 30);
    assertThat(c.execTimeout()).isEqualTo(Duration.ofMillis(500));
    assertThat(c.maxOutputBytes()).isEqualTo(1L << 20);
    assertThat(c.ttl()).isEqualTo(Duration.ofDays(1));
    assertThat(c.startTimeout()).isEqualTo(Duration.ofMinutes(2));
    assertThat(c.readOnlyRootFilesystem()).isFalse();
    assertThat(c.seccompProfile()).isEqualTo(SECCOMP);
  }

  @Test
  void profileIsOverlaidOnTheDefaults(@TempDir Path dir) throws Exception {
    AgentNestConfig config = AgentNestConfig.load(writeFull(dir), Map.of());

    SandboxConfig data = config.sandboxConfig("data");
    assertThat(data.image()).isEqualTo("example/python:data");
    assertThat(data.memoryBytes()).isEqualTo(4L << 30);
    assertThat(data.execTimeout()).isEqualTo(Duration.ofHours(1));
    assertThat(data.env()).containsExactlyInAnyOrderEntriesOf(Map.of("MODE", "data", "LEVEL", "2"));
    assertThat(data.labels())
        .containsExactlyInAnyOrderEntriesOf(Map.of("team", "search", "size", "big"));
    // inherited
    assertThat(data.runtime()).isEqualTo("gvisor");
    assertThat(data.pidsLimit()).isEqualTo(128);
    assertThat(data.seccompProfile()).isEqualTo(SECCOMP);

    SandboxConfig gvisor = config.sandboxConfig("gvisor");
    assertThat(gvisor.runtime()).isEqualTo("runsc");
    assertThat(gvisor.readOnlyRootFilesystem()).isTrue();
    assertThat(gvisor.image()).isEqualTo("example/python:3");

    assertThat(config.sandboxConfig(null))
        .usingRecursiveComparison()
        .isEqualTo(config.sandboxConfig());
  }

  @Test
  void emptyFileCommentsAndNullSectionsGiveTheBuiltInDefaults() {
    for (String yaml :
        List.of("", "# nothing here\n", "version: 1\n", "defaults:\nprofiles:\n", "~\n")) {
      assertThat(parse(yaml)).usingRecursiveComparison().isEqualTo(SandboxConfig.defaults());
    }
    assertThat(AgentNestConfig.parse("", "x").profiles()).isEmpty();
  }

  @Test
  void unknownProfileNamesTheKnownOnesAndTheNearest() {
    AgentNestConfig config =
        AgentNestConfig.parse(
            FULL.replace("    seccomp_profile: profiles/seccomp.json\n", ""), "a");
    assertThatThrownBy(() -> config.sandboxConfig("dta"))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "unknown profile 'dta'; did you mean 'data'? (known profiles in a: data, gvisor)");
    assertThatThrownBy(() -> AgentNestConfig.parse("", "a").sandboxConfig("data"))
        .hasMessage("unknown profile 'data' (a defines no profiles)");
  }

  @Test
  void yamlWithUnreadableSeccompFileFails() {
    assertThat(errorOf(FULL))
        .startsWith("agentnest.yaml:23:22: defaults.security.seccomp_profile: file ")
        .endsWith(
            "profiles/seccomp.json does not exist (a relative path is resolved against the"
                + " directory of agentnest.yaml)");
  }

  @Test
  void seccompPathIsRelativeToTheYamlFileNotTheWorkingDirectory(@TempDir Path dir)
      throws Exception {
    Path sub = Files.createDirectories(dir.resolve("conf"));
    Files.writeString(sub.resolve("sc.json"), SECCOMP);
    Path file = sub.resolve("agentnest.yaml");
    Files.writeString(file, "defaults:\n  security:\n    seccomp_profile: sc.json\n");

    assertThat(AgentNestConfig.load(file, Map.of()).sandboxConfig().seccompProfile())
        .isEqualTo(SECCOMP);
    assertThat(AgentNestConfig.load(file, Map.of()).effectiveYaml(null))
        .contains("seccomp_profile: " + sub.resolve("sc.json").toAbsolutePath().normalize());
  }

  @Test
  void seccompFileThatIsNotAProfileIsBlamedOnItsKey(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("sc.json"), "allow everything");
    Path file = dir.resolve("agentnest.yaml");
    Files.writeString(file, "defaults:\n  security:\n    seccomp_profile: sc.json\n");

    assertThatThrownBy(() -> AgentNestConfig.load(file, Map.of()))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith(
            file + ":3:22: defaults.security.seccomp_profile: seccompProfile must be a JSON");
  }

  // -------------------------------------------------------------------------------------------
  // Errors: file:line:column: path: message

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '`',
      textBlock =
          """
          defaults:\\n  limits:\\n    memroy: 512m | agentnest.yaml:3:5: defaults.limits.memroy: unknown key; did you mean 'memory'?
          defaults:\\n  netwrok:\\n    mode: none | agentnest.yaml:2:3: defaults.netwrok: unknown key; did you mean 'network'?
          profiles:\\n  data:\\n    imgae: x | agentnest.yaml:3:5: profiles.data.imgae: unknown key; did you mean 'image'?
          defualts: {} | agentnest.yaml:1:1: defualts: unknown key; did you mean 'defaults'?
          image: x | agentnest.yaml:1:1: image: unknown key; settings go under 'defaults:' or a profile
          defaults:\\n  xyzzy: 1 | agentnest.yaml:2:3: defaults.xyzzy: unknown key; valid keys here: backend, image, runtime, user, workdir, env, labels, limits, budgets, security, network, approvals, pool, remote, kubernetes
          defaults:\\n  read_only: true | agentnest.yaml:2:3: defaults.read_only: unknown key; did you mean 'read_only_root' (under 'security:')?
          defaults:\\n  limits:\\n    image: x | agentnest.yaml:3:5: defaults.limits.image: unknown key; 'image' goes directly in the section, not under 'limits:'
          defaults:\\n  limits:\\n    - memory: 1g | agentnest.yaml:3:5: defaults.limits: expected a map, e.g. limits: {cpus: 1.5}; got a list
          defaults: [1] | agentnest.yaml:1:11: defaults: expected a map, e.g. {backend: docker}; got a list
          - 1 | agentnest.yaml:1:1: expected a map with version, defaults and profiles, e.g. 'version: 1'; got a list
          defaults:\\n  limits:\\n    memory: lots | agentnest.yaml:3:13: defaults.limits.memory: expected a size (a number with k, m, g or t), e.g. 512m; got 'lots'
          defaults:\\n  limits:\\n    pids: many | agentnest.yaml:3:11: defaults.limits.pids: expected an integer, e.g. 256; got 'many'
          defaults:\\n  limits:\\n    pids: 1.5 | agentnest.yaml:3:11: defaults.limits.pids: expected an integer, e.g. 256; got '1.5'
          defaults:\\n  limits:\\n    cpus: lots | agentnest.yaml:3:11: defaults.limits.cpus: expected a number, e.g. 1.5; got 'lots'
          defaults:\\n  limits:\\n    ttl: soon | agentnest.yaml:3:10: defaults.limits.ttl: expected a duration (a number with ms, s, m, h or d), e.g. 30m; got 'soon'
          defaults:\\n  security:\\n    read_only_root: maybe | agentnest.yaml:3:21: defaults.security.read_only_root: expected a boolean (true or false), e.g. true; got 'maybe'
          defaults:\\n  image: [a, b] | agentnest.yaml:2:10: defaults.image: expected a string, e.g. agentnest/python:latest; got a list
          defaults:\\n  env: [a] | agentnest.yaml:2:8: defaults.env: expected a map of names to strings, e.g. {MODE: test}; got a list
          defaults:\\n  env:\\n    A: {b: 1} | agentnest.yaml:3:8: defaults.env.A: expected a string value, e.g. A: value; got a map
          defaults:\\n  network:\\n    mode: bridge | agentnest.yaml:3:11: defaults.network.mode: 'bridge' is not supported; supported: none, allowlist (none: no network at all; allowlist: only network.allow, through the host's proxy)
          version: 2 | agentnest.yaml:1:10: version: unsupported version 2; this AgentNest reads version 1
          version: one | agentnest.yaml:1:10: version: expected an integer, e.g. version: 1; got 'one'
          defaults:\\n  image: a\\n  image: b | agentnest.yaml:3:3: defaults.image: duplicate key (first defined at line 2, column 3)
          profiles:\\n  data: {}\\n  data: {} | agentnest.yaml:3:3: profiles.data: duplicate key (first defined at line 2, column 3)
          profiles:\\n  'my data': {} | agentnest.yaml:2:3: profiles["my data"]: invalid profile name 'my data': use letters, digits, '.', '_' and '-' (at most 64)
          defaults:\\n  image: a\\n   b: 2 | agentnest.yaml:3:5: YAML syntax error: mapping values are not allowed here
          defaults: [1, 2 | agentnest.yaml:1:16: YAML syntax error: expected ',' or ']', but got <stream end> (while parsing a flow sequence at line 1, column 11)
          defaults:\\n  image: &a x\\n  runtime: *a | agentnest.yaml:3:12: defaults.runtime: YAML aliases (*name) are not supported: write the value out in full
          defaults: {}\\n---\\nprofiles: {} | agentnest.yaml:3:1: only one YAML document is supported: remove the '---' and what follows it
          defaults:\\n  limits:\\n    pids: 4 | agentnest.yaml:3:11: defaults.limits.pids: pidsLimit must be at least 8 (the agent needs a few), got 4
          profiles:\\n  data:\\n    limits:\\n      memory: 8m | agentnest.yaml:4:15: profiles.data.limits.memory: memory must be at least 16m (16777216 bytes), got 8388608
          defaults:\\n  user: '0' | agentnest.yaml:2:9: defaults.user: user '0' is root: sandboxes run as a non-root user; use e.g. 1000:1000
          defaults:\\n  env:\\n    1BAD: x | agentnest.yaml:3:5: defaults.env.1BAD: environment variable name '1BAD' is invalid: use letters, digits and '_', not starting with a digit
          defaults:\\n  labels:\\n    agentnest.owner: me | agentnest.yaml:3:5: defaults.labels["agentnest.owner"]: label key 'agentnest.owner' is reserved: keys under 'agentnest.' are set by AgentNest
          defaults:\\n  limits:\\n    exec_timeout: 0s | agentnest.yaml:3:19: defaults.limits.exec_timeout: execTimeout must be positive, got PT0S
          defaults:\\n  budgets:\\n    tunnel_burst: 0 | agentnest.yaml:3:19: defaults.budgets.tunnel_burst: budgets.tunnel_burst must be from 1 to 100000, got 0: e.g. 200
          defaults:\\n  budgets:\\n    asks_per_second: -1 | agentnest.yaml:3:22: defaults.budgets.asks_per_second: budgets.asks_per_second must be in (0, 1000], got -1.0: e.g. 5
          defaults:\\n  budgets:\\n    asks_per_call: 99999999999 | agentnest.yaml:3:20: defaults.budgets.asks_per_call: budgets.asks_per_call 99999999999 is too large: e.g. 1000
          defaults:\\n  budgets:\\n    tunnels: 5 | agentnest.yaml:3:5: defaults.budgets.tunnels: unknown key; did you mean 'tunnel_burst'?
          """)
  void errorsNameFileLineColumnPathAndTheFix(String yaml, String message) {
    assertThat(errorOf(yaml.replace("\\n", "\n"))).isEqualTo(message);
  }

  @Test
  void errorsInLaterLinesCountLinesAndColumnsOfTheWholeFile() {
    String yaml =
        "# comment\n\nversion: 1\ndefaults:\n  image: x   # ok\n  limits:\n      memroy: 1g\n";
    assertThat(errorOf(yaml))
        .isEqualTo(
            "agentnest.yaml:7:7: defaults.limits.memroy: unknown key; did you mean 'memory'?");
  }

  @Test
  void aliasDetectionCountsCodePointsNotChars() {
    assertThat(errorOf("# \uD83D\uDE00 emoji\ndefaults:\n  image: &a x\n  runtime: *a\n"))
        .isEqualTo(
            "agentnest.yaml:4:12: defaults.runtime: YAML aliases (*name) are not supported: write"
                + " the value out in full");
    assertThat(parse("# \uD83D\uDE00\ndefaults:\n  image: '*x'\n").image()).isEqualTo("*x");
  }

  @Test
  void yamlBooleansNumbersAndQuotedStringsConvert() {
    SandboxConfig c =
        parse(
            """
            defaults:
              user: 1000
              limits: {cpus: 2, memory: 536870912, pids: 1_000, exec_timeout: 90}
              security: {read_only_root: yes}
            """);
    assertThat(c.user()).isEqualTo("1000");
    assertThat(c.cpus()).isEqualTo(2.0);
    assertThat(c.memoryBytes()).isEqualTo(512L << 20);
    assertThat(c.pidsLimit()).isEqualTo(1000);
    assertThat(c.execTimeout()).isEqualTo(Duration.ofSeconds(90));
    assertThat(c.readOnlyRootFilesystem()).isTrue();
  }

  @Test
  void missingFileAndDirectoryAreConfigErrors(@TempDir Path dir) {
    assertThatThrownBy(() -> AgentNestConfig.load(dir.resolve("nope.yaml"), Map.of()))
        .isInstanceOf(ConfigException.class)
        .hasMessage(dir.resolve("nope.yaml") + ": config file does not exist");
    assertThatThrownBy(() -> AgentNestConfig.load(dir, Map.of()))
        .isInstanceOf(ConfigException.class)
        .hasMessage(dir + ": is a directory, not a config file");
  }

  // -------------------------------------------------------------------------------------------
  // Environment

  @Test
  void environmentVariableNamesAreDerivedFromTheSchema() {
    assertThat(AgentNestConfig.environmentVariables().keySet())
        .containsExactlyInAnyOrder(
            "AGENTNEST_IMAGE",
            "AGENTNEST_RUNTIME",
            "AGENTNEST_BACKEND",
            "AGENTNEST_USER",
            "AGENTNEST_WORKDIR",
            "AGENTNEST_LIMITS_CPUS",
            "AGENTNEST_LIMITS_MEMORY",
            "AGENTNEST_LIMITS_PIDS",
            "AGENTNEST_LIMITS_OPEN_FILES",
            "AGENTNEST_LIMITS_GPUS",
            "AGENTNEST_LIMITS_TMP_SIZE",
            "AGENTNEST_LIMITS_WORKSPACE_SIZE",
            "AGENTNEST_LIMITS_EXEC_TIMEOUT",
            "AGENTNEST_LIMITS_MAX_OUTPUT",
            "AGENTNEST_LIMITS_TTL",
            "AGENTNEST_LIMITS_START_TIMEOUT",
            "AGENTNEST_BUDGETS_TUNNELS_PER_SECOND",
            "AGENTNEST_BUDGETS_TUNNEL_BURST",
            "AGENTNEST_BUDGETS_ASKS_PER_SECOND",
            "AGENTNEST_BUDGETS_ASK_BURST",
            "AGENTNEST_BUDGETS_ASKS_PER_CALL",
            "AGENTNEST_BUDGETS_DESTROY_AFTER_REFUSALS",
            "AGENTNEST_SECURITY_READ_ONLY_ROOT",
            "AGENTNEST_SECURITY_READ_ONLY_WORKSPACE",
            "AGENTNEST_NETWORK_MODE",
            "AGENTNEST_NETWORK_ALLOW",
            "AGENTNEST_NETWORK_ALLOW_ADDRESSES",
            "AGENTNEST_NETWORK_ON_UNKNOWN_HOST",
            "AGENTNEST_NETWORK_REMEMBER_DECISIONS",
            "AGENTNEST_NETWORK_APPROVAL_TIMEOUT",
            "AGENTNEST_APPROVALS_FILE_DELETE",
            "AGENTNEST_APPROVALS_SYSTEM_MODIFY",
            "AGENTNEST_APPROVALS_WRITABLE_PATHS",
            "AGENTNEST_APPROVALS_TIMEOUT",
            "AGENTNEST_POOL_NAME",
            "AGENTNEST_POOL_MIN_IDLE",
            "AGENTNEST_POOL_MAX_IDLE",
            "AGENTNEST_POOL_MAX_TOTAL",
            "AGENTNEST_POOL_MAX_USES",
            "AGENTNEST_POOL_IDLE_TTL",
            "AGENTNEST_POOL_REFILL_CONCURRENCY",
            "AGENTNEST_POOL_ON_EXHAUSTED",
            "AGENTNEST_POOL_MAX_WAIT",
            "AGENTNEST_REMOTE_URL",
            "AGENTNEST_KUBERNETES_CONTEXT",
            "AGENTNEST_KUBERNETES_NAMESPACE_PREFIX",
            "AGENTNEST_KUBERNETES_RUNTIME_CLASS",
            "AGENTNEST_KUBERNETES_API",
            "AGENTNEST_KUBERNETES_TENANT",
            "AGENTNEST_KUBERNETES_QUOTA_PODS",
            "AGENTNEST_KUBERNETES_QUOTA_CPU",
            "AGENTNEST_KUBERNETES_QUOTA_MEMORY",
            "AGENTNEST_KUBERNETES_POOL_TEMPLATE",
            "AGENTNEST_KUBERNETES_POOL_MIN_IDLE");
    assertThat(AgentNestConfig.environmentVariables())
        .containsEntry("AGENTNEST_LIMITS_TMP_SIZE", "limits.tmp_size");
  }

  @Test
  void environmentOverridesTheDefaultsAndTheProfile(@TempDir Path dir) throws Exception {
    Map<String, String> env =
        Map.of(
            "AGENTNEST_IMAGE",
            "from/env:1",
            "AGENTNEST_LIMITS_MEMORY",
            "3g",
            "AGENTNEST_LIMITS_EXEC_TIMEOUT",
            "45s",
            "AGENTNEST_SECURITY_READ_ONLY_ROOT",
            "TRUE",
            "AGENTNEST_LIMITS_PIDS",
            " ",
            "AGENTNEST_NETWORK_MODE",
            "none");
    AgentNestConfig config = AgentNestConfig.load(writeFull(dir), env);

    for (SandboxConfig c : List.of(config.sandboxConfig(), config.sandboxConfig("data"))) {
      assertThat(c.image()).isEqualTo("from/env:1");
      assertThat(c.memoryBytes()).isEqualTo(3L << 30);
      assertThat(c.execTimeout()).isEqualTo(Duration.ofSeconds(45));
      assertThat(c.readOnlyRootFilesystem()).isTrue();
      assertThat(c.pidsLimit()).as("blank value = unset").isEqualTo(128);
    }
    assertThat(config.sandboxConfig("data").env()).containsEntry("MODE", "data");
    assertThat(config.effectiveYaml("data"))
        .contains("image: from/env:1  # from AGENTNEST_IMAGE")
        .contains("# environment overrides: AGENTNEST_IMAGE, AGENTNEST_LIMITS_MEMORY");
  }

  @Test
  void environmentOverridesApplyWithoutAFileToo() {
    SandboxConfig c =
        AgentNestConfig.parse("", "x", Map.of("AGENTNEST_RUNTIME", "gvisor")).sandboxConfig();
    assertThat(c.runtime()).isEqualTo("gvisor");
    assertThat(parse("").runtime()).as("parse(yaml, name) ignores the environment").isNull();
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      quoteCharacter = '`',
      textBlock =
          """
          AGENTNEST_LIMITS_MEMORY | lots | environment variable AGENTNEST_LIMITS_MEMORY: expected a size (a number with k, m, g or t), e.g. 512m; got 'lots'
          AGENTNEST_LIMITS_PIDS | 2 | environment variable AGENTNEST_LIMITS_PIDS: pidsLimit must be at least 8 (the agent needs a few), got 2
          AGENTNEST_SECURITY_READ_ONLY_ROOT | yes | environment variable AGENTNEST_SECURITY_READ_ONLY_ROOT: expected a boolean (true or false), e.g. true; got 'yes'
          AGENTNEST_NETWORK_MODE | host | environment variable AGENTNEST_NETWORK_MODE: 'host' is not supported; supported: none, allowlist (none: no network at all; allowlist: only network.allow, through the host's proxy)
          AGENTNEST_USER | 0:0 | environment variable AGENTNEST_USER: user '0:0' is root: sandboxes run as a non-root user; use e.g. 1000:1000
          """)
  void invalidEnvironmentValueNamesTheVariable(String name, String value, String message) {
    assertThatThrownBy(() -> AgentNestConfig.parse("", "x", Map.of(name, value)))
        .isInstanceOf(ConfigException.class)
        .hasMessage(message);
  }

  @Test
  void agentnestProfileSelectsTheDefaultProfile() {
    String yaml = "profiles:\n  data:\n    image: d:1\n";
    AgentNestConfig config = AgentNestConfig.parse(yaml, "a", Map.of("AGENTNEST_PROFILE", "data"));
    assertThat(config.defaultProfile()).contains("data");
    assertThat(config.sandboxConfig().image()).isEqualTo("d:1");
    assertThat(config.sandboxConfig(null).image()).isEqualTo("d:1");
    assertThat(config.effectiveYaml(null)).contains("# profile: data\n");

    AgentNestConfig wrong = AgentNestConfig.parse(yaml, "a", Map.of("AGENTNEST_PROFILE", "dat"));
    assertThatThrownBy(wrong::sandboxConfig)
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "environment variable AGENTNEST_PROFILE: unknown profile 'dat'; did you mean 'data'?"
                + " (known profiles in a: data)");
    assertThat(wrong.sandboxConfig("data").image()).as("an explicit profile wins").isEqualTo("d:1");
  }

  // -------------------------------------------------------------------------------------------
  // Discovery

  @Test
  void discoveryPrefersTheWorkingDirectoryThenXdgThenHome(@TempDir Path dir) throws Exception {
    Path cwd = Files.createDirectories(dir.resolve("cwd"));
    Path xdg = Files.createDirectories(dir.resolve("xdg/agentnest"));
    Path home = Files.createDirectories(dir.resolve("home/.config/agentnest"));
    Files.writeString(home.resolve("agentnest.yaml"), "defaults: {image: home:1}\n");
    Map<String, String> env = Map.of("HOME", dir.resolve("home").toString());
    Map<String, String> envXdg =
        Map.of(
            "HOME",
            dir.resolve("home").toString(),
            "XDG_CONFIG_HOME",
            dir.resolve("xdg").toString());

    assertThat(AgentNestConfig.load(env, cwd).sandboxConfig().image()).isEqualTo("home:1");
    assertThat(AgentNestConfig.load(envXdg, cwd).source())
        .as("XDG_CONFIG_HOME replaces ~/.config")
        .isEmpty();

    Files.writeString(xdg.resolve("agentnest.yaml"), "defaults: {image: xdg:1}\n");
    assertThat(AgentNestConfig.load(envXdg, cwd).sandboxConfig().image()).isEqualTo("xdg:1");

    Files.writeString(cwd.resolve("agentnest.yaml"), "defaults: {image: cwd:1}\n");
    AgentNestConfig local = AgentNestConfig.load(envXdg, cwd);
    assertThat(local.sandboxConfig().image()).isEqualTo("cwd:1");
    assertThat(local.source()).contains(cwd.resolve("agentnest.yaml"));

    Path explicit = dir.resolve("other.yaml");
    Files.writeString(explicit, "defaults: {image: explicit:1}\n");
    Map<String, String> envExplicit = Map.of("AGENTNEST_CONFIG", explicit.toString());
    assertThat(AgentNestConfig.load(envExplicit, cwd).sandboxConfig().image())
        .isEqualTo("explicit:1");
  }

  /**
   * The attack of issue 42 (16): a repository the user runs in carries an agentnest.yaml whose
   * remote.url names the attacker's server; the key from AGENTNEST_API_KEY must not be sent there.
   */
  @Test
  void aWorkingDirectoryFileCannotNameTheServerTheKeyGoesTo(@TempDir Path dir) throws Exception {
    Path cwd = Files.createDirectories(dir.resolve("checkout"));
    Files.writeString(
        cwd.resolve("agentnest.yaml"),
        "defaults:\n  remote:\n    url: https://collector.attacker.example\n");
    Map<String, String> env = Map.of("HOME", dir.resolve("home").toString());

    assertThatThrownBy(() -> AgentNestConfig.load(env, cwd))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("remote.url")
        .hasMessageContaining("working directory cannot name the server AGENTNEST_API_KEY")
        .hasMessageContaining("export AGENTNEST_URL=https://collector.attacker.example");

    Files.writeString(
        cwd.resolve("agentnest.yaml"),
        "profiles:\n  p:\n    remote:\n      url: https://collector.attacker.example\n");
    assertThatThrownBy(() -> AgentNestConfig.load(env, cwd))
        .as("a profile in the working directory's file is refused the same way")
        .hasMessageContaining("working directory cannot name the server");
  }

  @Test
  void agentnestUrlWinsOverTheFilesRemoteUrl(@TempDir Path dir) throws Exception {
    Path cwd = Files.createDirectories(dir.resolve("checkout"));
    Files.writeString(
        cwd.resolve("agentnest.yaml"),
        "defaults:\n  image: cwd:1\n  remote:\n    url: https://collector.attacker.example\n");
    Map<String, String> env =
        Map.of("HOME", dir.resolve("home").toString(), "AGENTNEST_URL", "https://trusted.example");

    AgentNestConfig config = AgentNestConfig.load(env, cwd);
    assertThat(config.sandboxConfig().image()).isEqualTo("cwd:1");
    assertThat(config.sandboxConfig().remote())
        .as("the file's server is dropped: the key goes to AGENTNEST_URL's")
        .isNull();
  }

  @Test
  void theUserConfigFileMayStillNameTheServer(@TempDir Path dir) throws Exception {
    Path cwd = Files.createDirectories(dir.resolve("cwd"));
    Path user = Files.createDirectories(dir.resolve("home/.config/agentnest"));
    Files.writeString(
        user.resolve("agentnest.yaml"), "defaults:\n  remote:\n    url: https://mine.example\n");
    Map<String, String> env = Map.of("HOME", dir.resolve("home").toString());
    if (System.getenv("AGENTNEST_API_KEY") == null) {
      assertThatThrownBy(() -> AgentNestConfig.load(env, cwd))
          .as("trusted, so only the missing key is reported")
          .hasMessageContaining("AGENTNEST_API_KEY is not set");
    } else {
      assertThat(AgentNestConfig.load(env, cwd).sandboxConfig().remote()).isNotNull();
    }
  }

  @Test
  void noFileGivesBuiltInDefaults(@TempDir Path dir) {
    AgentNestConfig config = AgentNestConfig.load(Map.of("HOME", dir.toString()), dir);
    assertThat(config.source()).isEmpty();
    assertThat(config.sourceName()).isEqualTo("built-in defaults");
    assertThatThrownBy(() -> config.sandboxConfig("data"))
        .hasMessage(
            "unknown profile 'data' (no config file was found, so no profiles are defined; see"
                + " agentnest config)");
    assertThat(config.sandboxConfig())
        .usingRecursiveComparison()
        .isEqualTo(SandboxConfig.defaults());
  }

  @Test
  void missingAgentnestConfigFileIsAnError(@TempDir Path dir) {
    Path missing = dir.resolve("missing.yaml");
    assertThatThrownBy(
            () -> AgentNestConfig.load(Map.of("AGENTNEST_CONFIG", missing.toString()), dir))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "environment variable AGENTNEST_CONFIG: config file " + missing + " does not exist");
  }

  // -------------------------------------------------------------------------------------------
  // Effective config

  @Test
  void effectiveYamlAndJsonParseBackToTheSameSandboxConfig(@TempDir Path dir) throws Exception {
    AgentNestConfig config =
        AgentNestConfig.load(writeFull(dir), Map.of("AGENTNEST_LIMITS_PIDS", "77"));
    for (String profile : new String[] {null, "data", "gvisor"}) {
      SandboxConfig expected = config.sandboxConfig(profile);
      String yaml = config.effectiveYaml(profile);
      assertThat(AgentNestConfig.parse(yaml, "effective.yaml").sandboxConfig())
          .as(yaml)
          .usingRecursiveComparison()
          .isEqualTo(expected);
      String json = config.effectiveJson(profile);
      assertThat(AgentNestConfig.parse(json, "effective.json").sandboxConfig())
          .as(json)
          .usingRecursiveComparison()
          .isEqualTo(expected);
    }
  }

  @Test
  void effectiveYamlOfTheBuiltInDefaultsListsEveryKey() {
    String yaml = AgentNestConfig.parse("", "x").effectiveYaml(null);
    assertThat(yaml)
        .contains("version: 1\ndefaults:\n  backend: docker\n  image: agentnest/python:latest\n")
        .contains("  # runtime: not set (the engine's default)\n")
        .contains("  user: \"65534:65534\"\n")
        .contains("  env: {}\n")
        .contains("    memory: 512m\n")
        .contains("    exec_timeout: 1m\n")
        .contains("    read_only_root: true\n")
        .contains("    # seccomp_profile: not set (AgentNest's built-in profile)\n")
        .contains("    mode: none\n");
    assertThat(AgentNestConfig.parse(yaml, "x").sandboxConfig())
        .usingRecursiveComparison()
        .isEqualTo(SandboxConfig.defaults());
  }

  @Test
  void effectiveYamlQuotesStringsYamlWouldReadOtherwise() {
    String yaml =
        "defaults:\n  env: {A: 'true', B: '~', C: '1', D: 'a: b', E: '', F: \"x\\ny\"}\n"
            + "  labels: {'123': 'null'}\n";
    AgentNestConfig config = AgentNestConfig.parse(yaml, "x");
    AgentNestConfig back = AgentNestConfig.parse(config.effectiveYaml(null), "y");
    assertThat(back.sandboxConfig().env())
        .containsExactlyInAnyOrderEntriesOf(
            Map.of("A", "true", "B", "~", "C", "1", "D", "a: b", "E", "", "F", "x\ny"));
    assertThat(back.sandboxConfig().labels()).containsExactlyEntriesOf(Map.of("123", "null"));
  }

  // -------------------------------------------------------------------------------------------
  // The sample

  @Test
  void sampleConfigInDocsIsValid() {
    Path sample = Path.of("..", "docs", "agentnest.sample.yaml");
    assertThat(sample).exists();
    AgentNestConfig config = AgentNestConfig.load(sample, Map.of());

    assertThat(config.profiles()).contains("data", "gvisor");
    assertThat(config.sandboxConfig())
        .usingRecursiveComparison()
        .ignoringFields("runtime", "env", "labels")
        .isEqualTo(SandboxConfig.defaults());
    assertThat(config.sandboxConfig("data").image()).isEqualTo("agentnest/python:data");
    assertThat(config.sandboxConfig("data").memoryBytes())
        .isGreaterThan(config.sandboxConfig().memoryBytes());
    assertThat(config.sandboxConfig("gvisor").runtime()).isEqualTo("gvisor");
  }

  @Test
  void theSampleShowsEveryKeyTheSchemaKnows() throws Exception {
    // It says so at its top; a key added to the schema and not to the sample fails here.
    JsonNode sample =
        new ObjectMapper(new YAMLFactory())
            .readTree(Path.of("..", "docs", "agentnest.sample.yaml").toFile());
    String text = Files.readString(Path.of("..", "docs", "agentnest.sample.yaml"));
    Set<String> shown = new TreeSet<>();
    paths("", sample.path("defaults"), shown);
    sample.path("profiles").forEach(profile -> paths("", profile, shown));
    List<String> missing =
        Schema.FIELDS.stream()
            .map(f -> f.path)
            .filter(p -> shown.stream().noneMatch(s -> s.equals(p) || s.startsWith(p + ".")))
            .filter(p -> !shownInAComment(text, p))
            .toList();
    assertThat(missing).as("schema keys docs/agentnest.sample.yaml does not show").isEmpty();
  }

  /** A key shown commented out (its default differs from what it would do): "# key: ...". */
  private static boolean shownInAComment(String text, String path) {
    String[] parts = path.split("\\.");
    for (String part : parts) {
      if (!Pattern.compile("(?m)^\\s*(#\\s*)?(-\\s*)?" + part + ":").matcher(text).find()) {
        return false;
      }
    }
    return true;
  }

  private static void paths(String prefix, JsonNode node, Set<String> out) {
    node.fields()
        .forEachRemaining(
            e -> {
              String p = prefix.isEmpty() ? e.getKey() : prefix + "." + e.getKey();
              out.add(p);
              if (e.getValue().isObject()) {
                paths(p, e.getValue(), out);
              }
            });
  }

  @Test
  void budgetsMapOntoTheConfigAndTheEnvironmentOverridesThem() {
    AgentNestConfig c =
        AgentNestConfig.parse(
            "version: 1\ndefaults:\n  budgets:\n    tunnels_per_second: 2.5\n    tunnel_burst: 10\n"
                + "    asks_per_second: 1\n    ask_burst: 3\n    asks_per_call: 7\n"
                + "    destroy_after_refusals: 0\n",
            "agentnest.yaml",
            Map.of("AGENTNEST_BUDGETS_ASK_BURST", "4"));
    SandboxBudgets b = c.sandboxConfig().budgets();
    assertThat(b).isEqualTo(new SandboxBudgets(2.5, 10, 1, 4, 7, 0));
    assertThat(AgentNestConfig.parse("", "x").sandboxConfig().budgets())
        .isEqualTo(SandboxBudgets.defaults());
    assertThat(AgentNestConfig.parse(c.effectiveYaml(null), "y").sandboxConfig().budgets())
        .isEqualTo(b);
  }

  @Test
  void networkAllowlistMapsOntoThePolicy() {
    AgentNestConfig c =
        AgentNestConfig.parse(
            "version: 1\ndefaults:\n  network:\n    mode: allowlist\n"
                + "    allow: \"pypi.org, *.pythonhosted.org:443\"\n"
                + "    on_unknown_host: ask\n    approval_timeout: 5s\n",
            "net.yaml");
    NetworkPolicy p = c.sandboxConfig().network();
    assertThat(p.isNone()).isFalse();
    assertThat(p.match("files.pythonhosted.org", 443)).isPresent();
    assertThat(p.match("pypi.org", 443)).isPresent();
    assertThat(p.match("evil.org", 443)).isEmpty();
    assertThat(p.onUnknownHost()).isEqualTo(Mode.ASK);
    assertThat(p.approvalTimeout()).isEqualTo(Duration.ofSeconds(5));
    assertThat(AgentNestConfig.parse(c.effectiveYaml(null), "round.yaml").sandboxConfig().network())
        .isEqualTo(p);
  }

  @Test
  void badNetworkRuleNamesTheLine() {
    assertThatThrownBy(
            () ->
                AgentNestConfig.parse(
                    "version: 1\ndefaults:\n  network:\n    allow: \"a..b\"\n", "bad.yaml"))
        .isInstanceOf(ConfigException.class)
        .hasMessageStartingWith("bad.yaml:4:")
        .hasMessageContaining("defaults.network.allow");
  }
}
