package io.agentnest.internal.snapshot;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.ApprovalPolicy;
import io.agentnest.NetworkPolicy;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import io.agentnest.internal.support.Json;
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
    return Combinators.combine(base, env, labels, network, approvals, rest, seccomp)
        .as(
            (b, e, l, n, a, r, sc) -> {
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
                  .build();
            });
  }
}
