package io.agentnest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.agentnest.config.AgentNestConfig;
import io.agentnest.internal.remote.RemoteCreateRequest;
import io.agentnest.internal.snapshot.ConfigCodec;
import io.agentnest.internal.support.Json;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import org.junit.jupiter.api.Test;

/**
 * Every limit of {@link SandboxLimit} survives every encoding the house has by its one name: the
 * YAML file, its environment variable, the CLI's form of a value, a snapshot's saved config, and
 * the {@code /v1} create request (the server's side of it is in the server's RequestedLimitsTest).
 */
class SandboxLimitEncodingsTest {

  @Provide
  Arbitrary<Tuple.Tuple2<SandboxLimit, Long>> limitValues() {
    return Arbitraries.of(SandboxLimit.values())
        .flatMap(
            l ->
                Arbitraries.longs()
                    .between(l.least(), Math.min(l.most(), 1L << 40))
                    // A size as people write it: whole MiB survive the YAML's "64m" form exactly.
                    .map(v -> l.unit() == SandboxLimit.Unit.BYTES ? Math.max(1, v >> 20) << 20 : v)
                    .map(v -> Tuple.of(l, v)));
  }

  @Property(tries = 200)
  void aLimitSurvivesTheYamlFileByItsName(
      @ForAll("limitValues") Tuple.Tuple2<SandboxLimit, Long> lv) {
    SandboxLimit l = lv.get1();
    String yaml = "version: 1\ndefaults:\n  limits:\n    " + l.key() + ": " + l.format(lv.get2());

    SandboxConfig c = AgentNestConfig.parse(yaml, "agentnest.yaml").sandboxConfig();

    assertThat(c.limit(l)).isEqualTo(lv.get2());
  }

  @Property(tries = 100)
  void aLimitSurvivesItsEnvironmentVariable(
      @ForAll("limitValues") Tuple.Tuple2<SandboxLimit, Long> lv) {
    SandboxLimit l = lv.get1();
    String name = "AGENTNEST_LIMITS_" + l.key().toUpperCase(Locale.ROOT);

    SandboxConfig c =
        AgentNestConfig.parse("", "agentnest.yaml", Map.of(name, l.format(lv.get2())))
            .sandboxConfig();

    assertThat(AgentNestConfig.environmentVariables()).containsKey(name);
    assertThat(c.limit(l)).isEqualTo(lv.get2());
  }

  @Property(tries = 200)
  void aLimitSurvivesTheFormPeopleWriteAndTheBuilder(
      @ForAll("limitValues") Tuple.Tuple2<SandboxLimit, Long> lv) {
    SandboxLimit l = lv.get1();

    long parsed = l.parse(l.format(lv.get2()));
    SandboxConfig c = SandboxConfig.builder().limit(l, parsed).build();

    assertThat(c.limit(l)).isEqualTo(lv.get2());
    assertThat(c.toBuilder().build().limits()).isEqualTo(c.limits());
  }

  @Property(tries = 200)
  void aLimitSurvivesASnapshotsSavedConfig(
      @ForAll("limitValues") Tuple.Tuple2<SandboxLimit, Long> lv) throws Exception {
    SandboxConfig c = SandboxConfig.builder().limit(lv.get1(), lv.get2()).build();
    byte[] saved = Json.MAPPER.writeValueAsBytes(ConfigCodec.toJson(c));

    SandboxConfig back = ConfigCodec.fromJson(Json.MAPPER.readTree(saved));

    assertThat(back.limits()).isEqualTo(c.limits());
  }

  @Property(tries = 200)
  void aLimitGoesOnTheWireByItsOldFieldOrItsOneName(
      @ForAll("limitValues") Tuple.Tuple2<SandboxLimit, Long> lv) {
    SandboxLimit l = lv.get1();
    SandboxConfig c = SandboxConfig.builder().limit(l, lv.get2()).build();

    ObjectNode body = RemoteCreateRequest.body(c);

    JsonNode sent =
        l.wireAlias().isPresent()
            ? body.path(l.wireAlias().get())
            : body.path("limits").path(l.key());
    if (l.wireAlias().isEmpty() && lv.get2() == l.byDefault()) {
      // At its default a later limit is not sent: a server that predates it takes the request.
      assertThat(sent.isMissingNode()).isTrue();
    } else {
      assertThat(sent.asLong()).isEqualTo(lv.get2());
    }
  }

  @Test
  void aConfigAtTheDefaultsSendsAndSavesNoLimitsObject() {
    SandboxConfig d = SandboxConfig.defaults();

    assertThat(RemoteCreateRequest.body(d).has("limits")).isFalse();
    assertThat(ConfigCodec.toJson(d).has("limits")).isFalse();
  }

  @Test
  void namesAreOneWordGroupsInSnakeCaseAndTheOlderAliasesAreFrozen() {
    // A new limit takes its name everywhere; only those that predate the table have aliases.
    assertThat(SandboxLimit.values())
        .allSatisfy(l -> assertThat(l.key()).matches("[a-z]+(_[a-z]+)*"));
    assertThat(Arrays.stream(SandboxLimit.values()).filter(l -> l.wireAlias().isPresent()).toList())
        .containsExactly(SandboxLimit.PIDS, SandboxLimit.TMP_SIZE, SandboxLimit.WORKSPACE_SIZE);
    assertThat(Arrays.stream(SandboxLimit.values()).filter(l -> l.savedAlias().isPresent()))
        .containsExactly(SandboxLimit.PIDS, SandboxLimit.TMP_SIZE, SandboxLimit.WORKSPACE_SIZE);
  }

  @Test
  void aValueOutsideItsRangeIsRefusedNamingTheLimitAndWhereToSetIt() {
    assertThatThrownBy(() -> SandboxConfig.builder().limit(SandboxLimit.OPEN_FILES, 10).build())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("limits.open_files must be at least 64, got 10")
        .hasMessageContaining("--limit open_files=4096");
    assertThatThrownBy(
            () -> SandboxConfig.builder().limit(SandboxLimit.OPEN_FILES, 1L << 21).build())
        .hasMessageContaining("at most 1048576");
    assertThatThrownBy(() -> SandboxLimit.require("open_file"))
        .hasMessageContaining("unknown limit 'open_file'")
        .hasMessageContaining("open_files");
    assertThatThrownBy(() -> SandboxLimit.OPEN_FILES.parse("many"))
        .hasMessageContaining("limits.open_files 'many' is not a whole number");
  }

  @Test
  void aSavedConfigWithALimitThisVersionDoesNotKnowIsRefusedNotDropped() {
    ObjectNode saved = ConfigCodec.toJson(SandboxConfig.defaults());
    saved.putObject("limits").put("open_sockets", 12);

    assertThatThrownBy(() -> ConfigCodec.fromJson(saved))
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("'open_sockets'")
        .hasMessageContaining("does not know");
    saved.putObject("limits").put("open_files", 1.5);
    assertThatThrownBy(() -> ConfigCodec.fromJson(saved)).hasMessageContaining("whole number");
  }
}
