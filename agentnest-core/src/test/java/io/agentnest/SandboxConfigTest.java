package io.agentnest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.assertj.core.api.AbstractThrowableAssert;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SandboxConfigTest {

  private static AbstractThrowableAssert<?, ? extends Throwable> assertInvalid(
      UnaryOperator<SandboxConfig.Builder> change) {
    return assertThatThrownBy(() -> change.apply(SandboxConfig.builder()).build())
        .isExactlyInstanceOf(ConfigException.class);
  }

  @Test
  void defaultsAreHardened() {
    SandboxConfig c = SandboxConfig.defaults();

    assertThat(c.backend()).isEqualTo("docker");
    assertThat(c.image())
        .isEqualTo("agentnest/python:latest")
        .isEqualTo(SandboxConfig.DEFAULT_IMAGE);
    assertThat(c.runtime()).isNull();
    assertThat(c.user()).isEqualTo("65534:65534");
    assertThat(c.readOnlyRootFilesystem()).isTrue();
    assertThat(c.memoryBytes()).isEqualTo(512L * 1024 * 1024);
    assertThat(c.pidsLimit()).isEqualTo(256);
    assertThat(c.cpus()).isEqualTo(1.0);
    assertThat(c.execTimeout()).isEqualTo(Duration.ofSeconds(60));
    assertThat(c.startTimeout()).isEqualTo(Duration.ofSeconds(30));
    assertThat(c.maxOutputBytes()).isEqualTo(10L * 1024 * 1024);
    assertThat(c.tmpSizeBytes()).isEqualTo(64L << 20);
    assertThat(c.workspaceSizeBytes()).isEqualTo(256L << 20);
    assertThat(c.ttl()).isEqualTo(Duration.ofMinutes(30));
    assertThat(c.workdir()).isEqualTo("/workspace").isEqualTo(SandboxConfig.WORKSPACE);
    assertThat(c.env()).isEmpty();
    assertThat(c.labels()).isEmpty();
    assertThat(c.seccompProfile()).isNull();
  }

  @Test
  void memoryParsesHumanSizes() {
    assertThat(SandboxConfig.builder().memory("1g").build().memoryBytes()).isEqualTo(1L << 30);
    assertThat(SandboxConfig.builder().memory("256m").build().memoryBytes()).isEqualTo(256L << 20);
    assertThat(SandboxConfig.builder().memory("2GiB").build().memoryBytes()).isEqualTo(2L << 30);
  }

  @Test
  void memoryWithBadSizeNamesTheField() {
    assertThatThrownBy(() -> SandboxConfig.builder().memory("lots"))
        .isExactlyInstanceOf(ConfigException.class)
        .hasMessageContaining("memory")
        .hasMessageContaining("lots");
  }

  @ParameterizedTest
  @ValueSource(doubles = {0, -1, 1024.5, Double.NaN, Double.POSITIVE_INFINITY})
  void badCpusAreRefused(double cpus) {
    assertInvalid(b -> b.cpus(cpus)).hasMessageContaining("cpus");
  }

  @Test
  void cpusBoundsAreInclusiveAt1024() {
    assertThat(SandboxConfig.builder().cpus(1024).build().cpus()).isEqualTo(1024);
    assertThat(SandboxConfig.builder().cpus(0.01).build().cpus()).isEqualTo(0.01);
  }

  @Test
  void tinyMemoryIsRefused() {
    assertInvalid(b -> b.memoryBytes(1 << 20))
        .hasMessageContaining("memory")
        .hasMessageContaining("16m");
    assertInvalid(b -> b.memory("15m")).hasMessageContaining("memory");
    assertThat(SandboxConfig.builder().memory("16m").build().memoryBytes()).isEqualTo(16L << 20);
  }

  @Test
  void tinyTmpAndWorkspaceSizesAreRefused() {
    assertInvalid(b -> b.tmpSizeBytes(1000)).hasMessageContaining("tmpSize");
    assertInvalid(b -> b.workspaceSizeBytes(0)).hasMessageContaining("workspaceSize");
  }

  @ParameterizedTest
  @ValueSource(longs = {7, 0, -1})
  void tooFewPidsAreRefused(long pids) {
    assertInvalid(b -> b.pidsLimit(pids)).hasMessageContaining("pidsLimit");
  }

  @Test
  void eightPidsAreEnough() {
    assertThat(SandboxConfig.builder().pidsLimit(8).build().pidsLimit()).isEqualTo(8);
  }

  @ParameterizedTest
  @ValueSource(strings = {"0", "0:0", "0:1000"})
  void rootUserIsRefused(String user) {
    assertInvalid(b -> b.user(user)).hasMessageContaining("user").hasMessageContaining("root");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {"nobody", "root", "1000:", ":1000", "1000:abc", "", "-1", "1000:1000:1000"})
  void nonNumericUserIsRefused(String user) {
    assertInvalid(b -> b.user(user)).hasMessageContaining("user '" + user + "' is invalid");
  }

  @ParameterizedTest
  @ValueSource(strings = {"1000", "1000:1000", "65534", "1:1"})
  void numericNonRootUsersAreAccepted(String user) {
    assertThat(SandboxConfig.builder().user(user).build().user()).isEqualTo(user);
  }

  @ParameterizedTest
  @ValueSource(strings = {"1BAD", "BAD-NAME", "", "A B", "X=Y", "É"})
  void badEnvNamesAreRefused(String name) {
    assertInvalid(b -> b.env(name, "v"))
        .hasMessageContaining("environment variable name '" + name + "'");
  }

  @Test
  void goodEnvNamesAreAccepted() {
    SandboxConfig c = SandboxConfig.builder().env("_X1", "a").env(Map.of("MODE", "test")).build();
    assertThat(c.env()).containsEntry("_X1", "a").containsEntry("MODE", "test");
  }

  @ParameterizedTest
  @ValueSource(strings = {"agentnest.x", "agentnest.managed", "agentnest.owner"})
  void reservedLabelKeysAreRefused(String key) {
    assertInvalid(b -> b.label(key, "v"))
        .hasMessageContaining("label key '" + key + "'")
        .hasMessageContaining("reserved");
  }

  @ParameterizedTest
  @ValueSource(strings = {"Upper", "", "-lead", "trail-", "has space", "a=b"})
  void invalidLabelKeysAreRefused(String key) {
    assertInvalid(b -> b.label(key, "v"))
        .hasMessageContaining("label key '" + key + "' is invalid");
  }

  @Test
  void labelKeyLongerThan128CharactersIsRefused() {
    String key = "a".repeat(129);
    assertInvalid(b -> b.label(key, "v")).hasMessageContaining("is invalid");
    assertThat(SandboxConfig.builder().label("a".repeat(128), "v").build().labels()).hasSize(1);
  }

  @ParameterizedTest
  @ValueSource(strings = {"team", "a", "example.com/owner", "my-app.tier_2"})
  void validLabelKeysAreAccepted(String key) {
    assertThat(SandboxConfig.builder().label(key, "v").build().labels()).containsEntry(key, "v");
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "   "})
  void blankImageIsRefused(String image) {
    assertInvalid(b -> b.image(image)).hasMessageContaining("image");
  }

  @ParameterizedTest
  @ValueSource(strings = {"python: latest", "python\tlatest", "python:latest\n", " python"})
  void imageWithWhitespaceIsRefused(String image) {
    assertInvalid(b -> b.image(image)).hasMessageContaining("image '");
  }

  @Test
  void blankBackendIsRefused() {
    assertInvalid(b -> b.backend(" ")).hasMessageContaining("backend");
  }

  @ParameterizedTest
  @ValueSource(strings = {"", "-runc", "run c", "a/b"})
  void badRuntimeIsRefused(String runtime) {
    assertInvalid(b -> b.runtime(runtime)).hasMessageContaining("runtime");
  }

  @Test
  void goodRuntimesAreAccepted() {
    assertThat(SandboxConfig.builder().runtime("runsc").build().runtime()).isEqualTo("runsc");
    assertThat(SandboxConfig.builder().runtime(null).build().runtime()).isNull();
  }

  @Test
  void badWorkdirIsRefused() {
    assertInvalid(b -> b.workdir("")).hasMessageContaining("workdir");
    assertInvalid(b -> b.workdir("a\0b")).hasMessageContaining("workdir");
  }

  @Test
  void nonPositiveTimeoutsAreRefused() {
    assertInvalid(b -> b.execTimeout(Duration.ZERO)).hasMessageContaining("execTimeout");
    assertInvalid(b -> b.execTimeout(Duration.ofSeconds(-1))).hasMessageContaining("execTimeout");
    assertInvalid(b -> b.startTimeout(Duration.ZERO)).hasMessageContaining("startTimeout");
    assertInvalid(b -> b.startTimeout(Duration.ofMillis(-5))).hasMessageContaining("startTimeout");
  }

  @Test
  void negativeMaxOutputIsRefused() {
    assertInvalid(b -> b.maxOutputBytes(-1)).hasMessageContaining("maxOutputBytes");
    assertThat(SandboxConfig.builder().maxOutputBytes(0).build().maxOutputBytes()).isZero();
  }

  @Test
  void nullsAreRefusedEagerlyNamingTheParameter() {
    assertThatThrownBy(() -> SandboxConfig.builder().image(null))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("image");
    assertThatThrownBy(() -> SandboxConfig.builder().env("A", null))
        .isInstanceOf(NullPointerException.class)
        .hasMessage("value");
  }

  @Test
  void toBuilderRoundTripKeepsEveryValue() {
    SandboxConfig original =
        SandboxConfig.builder()
            .backend("fake")
            .image("example/img:1")
            .runtime("gvisor")
            .cpus(2.5)
            .memory("1g")
            .pidsLimit(100)
            .tmpSizeBytes(2L << 20)
            .workspaceSizeBytes(3L << 20)
            .env("A", "1")
            .env("B", "2")
            .workdir("project")
            .label("team", "x")
            .execTimeout(Duration.ofSeconds(5))
            .maxOutputBytes(1234)
            .startTimeout(Duration.ofSeconds(7))
            .user("1000:1001")
            .readOnlyRootFilesystem(false)
            .seccompProfile("{}")
            .build();

    SandboxConfig copy = original.toBuilder().build();

    assertThat(copy).usingRecursiveComparison().isEqualTo(original);
    assertThat(copy.backend()).isEqualTo("fake");
    assertThat(copy.image()).isEqualTo("example/img:1");
    assertThat(copy.runtime()).isEqualTo("gvisor");
    assertThat(copy.cpus()).isEqualTo(2.5);
    assertThat(copy.memoryBytes()).isEqualTo(1L << 30);
    assertThat(copy.pidsLimit()).isEqualTo(100);
    assertThat(copy.tmpSizeBytes()).isEqualTo(2L << 20);
    assertThat(copy.workspaceSizeBytes()).isEqualTo(3L << 20);
    assertThat(copy.env()).isEqualTo(Map.of("A", "1", "B", "2"));
    assertThat(copy.workdir()).isEqualTo("project");
    assertThat(copy.labels()).isEqualTo(Map.of("team", "x"));
    assertThat(copy.execTimeout()).isEqualTo(Duration.ofSeconds(5));
    assertThat(copy.maxOutputBytes()).isEqualTo(1234);
    assertThat(copy.startTimeout()).isEqualTo(Duration.ofSeconds(7));
    assertThat(copy.user()).isEqualTo("1000:1001");
    assertThat(copy.readOnlyRootFilesystem()).isFalse();
    assertThat(copy.seccompProfile()).isEqualTo("{}");
  }

  @Test
  void toBuilderIsIndependentOfTheOriginal() {
    SandboxConfig original = SandboxConfig.builder().env("A", "1").build();
    SandboxConfig changed = original.toBuilder().env("B", "2").label("k", "v").build();

    assertThat(original.env()).containsOnlyKeys("A");
    assertThat(original.labels()).isEmpty();
    assertThat(changed.env()).containsOnlyKeys("A", "B");
  }

  @Test
  void mapsAreImmutable() {
    SandboxConfig c = SandboxConfig.builder().env("A", "1").label("k", "v").build();
    assertThatThrownBy(() -> c.env().put("B", "2"))
        .isInstanceOf(UnsupportedOperationException.class);
    assertThatThrownBy(() -> c.labels().clear()).isInstanceOf(UnsupportedOperationException.class);
  }

  @ParameterizedTest
  @ValueSource(strings = {"00", "000:0", "0000000000", "00:00"})
  void rootWrittenWithLeadingZerosIsRefused(String user) {
    assertThatThrownBy(() -> SandboxConfig.builder().user(user).build())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("root");
  }

  @Test
  void seccompProfileMustBeAJsonProfile() {
    assertThatThrownBy(() -> SandboxConfig.builder().seccompProfile("unconfined").build())
        .isInstanceOf(ConfigException.class)
        .hasMessageContaining("seccompProfile");
    assertThat(
            SandboxConfig.builder()
                .seccompProfile("{\"defaultAction\":\"SCMP_ACT_ALLOW\"}")
                .build()
                .seccompProfile())
        .startsWith("{");
  }
}
