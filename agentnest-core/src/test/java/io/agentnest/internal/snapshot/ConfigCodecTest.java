package io.agentnest.internal.snapshot;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.ApprovalPolicy;
import io.agentnest.NetworkPolicy;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import io.agentnest.internal.support.Json;
import io.agentnest.spi.Labels;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

class ConfigCodecTest {

  @Property(tries = 300)
  void aConfigSurvivesTheTripThroughItsJsonBytes(@ForAll("configs") SandboxConfig c)
      throws Exception {
    JsonNode encoded = ConfigCodec.toJson(c);
    SandboxConfig back =
        ConfigCodec.fromJson(Json.MAPPER.readTree(Json.MAPPER.writeValueAsBytes(encoded)));

    assertThat(ConfigCodec.toJson(back)).isEqualTo(encoded);
    assertThat(back.image()).isEqualTo(c.image());
    assertThat(back.runtime()).isEqualTo(c.runtime());
    assertThat(back.cpus()).isEqualTo(c.cpus());
    assertThat(back.memoryBytes()).isEqualTo(c.memoryBytes());
    assertThat(back.env()).isEqualTo(c.env());
    assertThat(back.labels()).isEqualTo(c.labels());
    assertThat(back.network().rules()).isEqualTo(c.network().rules());
    assertThat(back.network().allowedAddresses()).isEqualTo(c.network().allowedAddresses());
    assertThat(back.approvals().fileDeletion()).isEqualTo(c.approvals().fileDeletion());
    assertThat(back.approvals().pythonRules()).isEqualTo(c.approvals().pythonRules());
    assertThat(back.approvals().writablePaths()).isEqualTo(c.approvals().writablePaths());
    assertThat(back.ttl()).isEqualTo(c.ttl());
    assertThat(back.readOnlyWorkspace()).isEqualTo(c.readOnlyWorkspace());
    assertThat(back.seccompProfile()).isEqualTo(c.seccompProfile());
    assertThat(back.tenant()).as("a restored sandbox stays in its tenant").isEqualTo(c.tenant());
  }

  @Property(tries = 100)
  void secretValuesNeverEnterTheEncodingOnlyTheirNames(
      @ForAll("configs") SandboxConfig c, @ForAll("secretValues") String value) throws Exception {
    SandboxConfig withSecret =
        c.toBuilder().secretEnv("API_TOKEN_SECRET", Secret.of(value)).build();
    byte[] bytes = Json.MAPPER.writeValueAsBytes(ConfigCodec.toJson(withSecret));

    assertThat(new String(bytes, StandardCharsets.UTF_8)).doesNotContain(value);
    assertThat(ConfigCodec.toJson(withSecret).path("secret_env_names").toString())
        .contains("API_TOKEN_SECRET");
  }

  @Test
  void aConfigOfAnOlderVersionWithoutTheLaterFieldsKeepsTheirDefaults() {
    JsonNode old =
        Json.object()
            .put("backend", "docker")
            .put("image", "agentnest/python:latest")
            .put("cpus", 1.0)
            .put("memory_bytes", 512L << 20)
            .put("pids_limit", 256)
            .put("tmp_bytes", 64L << 20)
            .put("workspace_bytes", 256L << 20)
            .put("max_output_bytes", 10L << 20)
            .put("user", "65534:65534");

    SandboxConfig c = ConfigCodec.fromJson(old);

    SandboxConfig d = SandboxConfig.defaults();
    assertThat(c.workdir()).isEqualTo(d.workdir());
    assertThat(c.ttl()).isEqualTo(d.ttl());
    assertThat(c.readOnlyRootFilesystem()).isEqualTo(d.readOnlyRootFilesystem());
    assertThat(c.network().isNone()).isTrue();
  }

  @Property(tries = 200)
  void theLabelledLimitsSurviveTheTripThroughTheLabels(@ForAll("configs") SandboxConfig c) {
    SandboxConfig back =
        ConfigCodec.fromLabels(ConfigCodec.toLabels(c), SandboxConfig.builder()).build();

    assertThat(back.execTimeout()).isEqualTo(c.execTimeout());
    assertThat(back.maxOutputBytes()).isEqualTo(c.maxOutputBytes());
    assertThat(back.memoryBytes()).isEqualTo(c.memoryBytes());
    assertThat(ConfigCodec.toLabels(back)).isEqualTo(ConfigCodec.toLabels(c));
  }

  @Property(tries = 100)
  void theLabelsCarryTheSameNumbersAsTheJson(@ForAll("configs") SandboxConfig c) {
    JsonNode json = ConfigCodec.toJson(c);
    Map<String, String> labels = ConfigCodec.toLabels(c);

    assertThat(labels)
        .containsExactly(
            Map.entry(Labels.EXEC_TIMEOUT_MS, json.path("exec_timeout_ms").asText()),
            Map.entry(Labels.MAX_OUTPUT, json.path("max_output_bytes").asText()),
            Map.entry(Labels.MEMORY, json.path("memory_bytes").asText()));
  }

  @Test
  void labelsWrittenByTheEarlierEncodingAreStillRead() {
    // As SecurityPolicy wrote them before the codec owned them: decimal strings under these keys.
    Map<String, String> earlier =
        Map.of(
            "agentnest.exec-timeout-ms", "90000",
            "agentnest.max-output", "1048576",
            "agentnest.memory-bytes", "536870912",
            "agentnest.managed", "true");

    SandboxConfig c = ConfigCodec.fromLabels(earlier, SandboxConfig.builder()).build();

    assertThat(c.execTimeout()).isEqualTo(Duration.ofSeconds(90));
    assertThat(c.maxOutputBytes()).isEqualTo(1L << 20);
    assertThat(c.memoryBytes()).isEqualTo(512L << 20);
  }

  @Test
  void missingOrUnreadableLabelsKeepTheDefaultsAndTooSmallOnesAreRaised() {
    SandboxConfig d = SandboxConfig.defaults();
    Map<String, String> odd =
        Map.of(
            Labels.EXEC_TIMEOUT_MS, "soon",
            Labels.MAX_OUTPUT, "-5",
            Labels.MEMORY, "1");

    SandboxConfig c = ConfigCodec.fromLabels(odd, SandboxConfig.builder()).build();
    SandboxConfig none = ConfigCodec.fromLabels(Map.of(), SandboxConfig.builder()).build();

    assertThat(c.execTimeout()).isEqualTo(d.execTimeout());
    assertThat(c.maxOutputBytes()).isZero();
    assertThat(c.memoryBytes()).isEqualTo(16L << 20);
    assertThat(ConfigCodec.toLabels(none)).isEqualTo(ConfigCodec.toLabels(d));
  }

  @Test
  void aConfigSavedByTheEarlierEncodingDecodesAndEncodesToTheSameJson() throws Exception {
    // Every field, as the codec wrote it before the labels joined it: existing snapshots restore.
    String saved =
        "{\"backend\":\"docker\",\"image\":\"agentnest/python:latest\",\"runtime\":\"runsc\","
            + "\"cpus\":1.5,\"memory_bytes\":536870912,\"pids_limit\":256,"
            + "\"tmp_bytes\":67108864,\"workspace_bytes\":268435456,"
            + "\"max_output_bytes\":1048576,\"user\":\"1000:1000\",\"env\":{\"A\":\"1\"},"
            + "\"secret_env_names\":[\"TOKEN\"],"
            + "\"network\":{\"allow\":[\"example.org\"],\"allow_addresses\":[\"10.0.0.0/8\"]},"
            + "\"redact_credentials\":true,\"workdir\":\"/workspace\",\"labels\":{\"team\":\"a\"},"
            + "\"exec_timeout_ms\":90000,\"start_timeout_ms\":30000,\"ttl_ms\":3600000,"
            + "\"read_only_root\":true,\"read_only_workspace\":false,"
            + "\"approvals\":{\"file_deletion\":\"ASK\",\"system_modification\":\"DENY\","
            + "\"timeout_ms\":60000,\"shell\":[{\"regex\":\"rm\\\\s+-rf\",\"action\":\"ASK\"}],"
            + "\"python\":{\"os.system\":\"DENY\"},\"writable_paths\":[\"/workspace/out\"]}}";
    JsonNode json = Json.MAPPER.readTree(saved);

    SandboxConfig c = ConfigCodec.fromJson(json);

    assertThat(c.memoryBytes()).isEqualTo(512L << 20);
    assertThat(c.maxOutputBytes()).isEqualTo(1L << 20);
    assertThat(c.execTimeout()).isEqualTo(Duration.ofSeconds(90));
    assertThat(c.runtime()).isEqualTo("runsc");
    assertThat(c.approvals().fileDeletion()).isEqualTo(ApprovalPolicy.Action.ASK);
    ObjectNode again = ConfigCodec.toJson(c);
    again.remove("secret_env_names");
    ((ObjectNode) json).remove("secret_env_names");
    // Text, not nodes: the parser reads small numbers as ints, the encoder writes longs.
    assertThat(again.toString()).isEqualTo(json.toString());
  }

  @Provide
  Arbitrary<String> secretValues() {
    return Arbitraries.strings().withCharRange('a', 'z').numeric().ofMinLength(12).ofMaxLength(40);
  }

  @Provide
  Arbitrary<SandboxConfig> configs() {
    Arbitrary<SandboxConfig.Builder> base =
        Combinators.combine(
                Arbitraries.of("agentnest/python:latest", "python:3.12-slim", "img@sha256:ab12"),
                Arbitraries.of("runc", "runsc", "gvisor").injectNull(0.3),
                Arbitraries.doubles().between(0.01, 64).ofScale(3),
                Arbitraries.longs().between(16L << 20, 64L << 30),
                Arbitraries.longs().between(8, 1 << 20),
                Arbitraries.longs().between(1L << 20, 8L << 30),
                Arbitraries.longs().between(1L << 20, 8L << 30),
                Arbitraries.longs().between(0, 1L << 40))
            .as(
                (image, runtime, cpus, mem, pids, tmp, ws, out) ->
                    SandboxConfig.builder()
                        .image(image)
                        .runtime(runtime)
                        .cpus(cpus)
                        .memoryBytes(mem)
                        .pidsLimit(pids)
                        .tmpSizeBytes(tmp)
                        .workspaceSizeBytes(ws)
                        .maxOutputBytes(out));
    Arbitrary<Map<String, String>> env =
        Arbitraries.maps(
                Arbitraries.strings().withCharRange('A', 'Z').ofMinLength(1).ofMaxLength(8),
                Arbitraries.strings()
                    .withCharRange(' ', '~')
                    .withCharRange('\u00e0', '\u00ff')
                    .ofMaxLength(30))
            .ofMaxSize(4);
    Arbitrary<Map<String, String>> labels =
        Arbitraries.maps(
                Arbitraries.strings().withCharRange('a', 'z').ofMinLength(1).ofMaxLength(8),
                Arbitraries.strings().alpha().numeric().ofMaxLength(12))
            .ofMaxSize(3);
    Arbitrary<NetworkPolicy> network =
        Combinators.combine(
                Arbitraries.subsetOf("example.org", "*.example.com", "api.github.com"),
                Arbitraries.subsetOf("10.0.0.0/8", "192.168.1.7/32"))
            .as(
                (rules, cidrs) -> {
                  if (rules.isEmpty() && cidrs.isEmpty()) {
                    return NetworkPolicy.none();
                  }
                  NetworkPolicy.Builder b = NetworkPolicy.builder();
                  rules.stream().sorted().forEach(b::allow);
                  cidrs.stream().sorted().forEach(b::allowAddress);
                  return b.build();
                });
    Arbitrary<ApprovalPolicy> approvals =
        Combinators.combine(
                Arbitraries.of(ApprovalPolicy.Action.class),
                Arbitraries.of(ApprovalPolicy.Action.class),
                Arbitraries.longs().between(1, 86_400_000L),
                Arbitraries.subsetOf("rm\\s+-rf", "curl .*\\| *sh"),
                Arbitraries.subsetOf("os.system", "subprocess.Popen"),
                Arbitraries.subsetOf("/workspace/out", "/tmp/cache"))
            .as(
                (del, sys, ms, shell, python, paths) -> {
                  ApprovalPolicy.Builder b =
                      ApprovalPolicy.builder()
                          .fileDeletion(del)
                          .systemModification(sys)
                          .timeout(Duration.ofMillis(ms));
                  shell.stream().sorted().forEach(r -> b.shell(r, ApprovalPolicy.Action.ASK));
                  python.stream().sorted().forEach(e -> b.python(e, ApprovalPolicy.Action.DENY));
                  b.writablePaths(paths.stream().sorted().toList());
                  return b.build();
                });
    Arbitrary<List<Object>> rest =
        Combinators.combine(
                Arbitraries.longs().between(1, 86_400_000L),
                Arbitraries.longs().between(1, 86_400_000L),
                Arbitraries.longs().between(1, 365L * 86_400),
                Arbitraries.of("65534:65534", "1000", "1000:1000"),
                Arbitraries.of(true, false),
                Arbitraries.of(true, false),
                Arbitraries.of(true, false),
                Arbitraries.of("/workspace", "/tmp/w"))
            .as(
                (exec, start, ttl, user, roRoot, roWs, redact, workdir) ->
                    List.of(exec, start, ttl, user, roRoot, roWs, redact, workdir));
    Arbitrary<String> seccomp =
        Arbitraries.of("{\"defaultAction\":\"SCMP_ACT_ERRNO\"}").injectNull(0.7);
    Arbitrary<String> tenant = Arbitraries.of("search", "team-a").injectNull(0.5);
    return Combinators.combine(base, env, labels, network, approvals, rest, seccomp, tenant)
        .as(
            (b, e, l, n, a, r, sc, t) -> {
              e.forEach(b::env);
              l.forEach(b::label);
              return b.network(n)
                  .approvals(a)
                  .execTimeout(Duration.ofMillis((Long) r.get(0)))
                  .startTimeout(Duration.ofMillis((Long) r.get(1)))
                  .ttl(Duration.ofSeconds((Long) r.get(2)))
                  .user((String) r.get(3))
                  .readOnlyRootFilesystem((Boolean) r.get(4))
                  .readOnlyWorkspace((Boolean) r.get(4) && (Boolean) r.get(5))
                  .redactCredentials((Boolean) r.get(6))
                  .workdir((String) r.get(7))
                  .seccompProfile(sc)
                  .tenant(t)
                  .build();
            });
  }
}
