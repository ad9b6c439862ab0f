package io.agentnest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.LongRange;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class SizesTest {

  @ParameterizedTest
  @CsvSource({
    "0, 0",
    "10, 10",
    "10b, 10",
    "100k, 102400",
    "1K, 1024",
    "1kb, 1024",
    "1KiB, 1024",
    "512m, 536870912",
    "512M, 536870912",
    "512MB, 536870912",
    "2g, 2147483648",
    "2GiB, 2147483648",
    "1t, 1099511627776",
    "1.5g, 1610612736",
    "0.5k, 512",
    "'  64m  ', 67108864",
    "'16 m', 16777216"
  })
  void parsesHumanSizes(String text, long expected) {
    assertThat(Sizes.parse("memory", text)).isEqualTo(expected);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {"", "   ", "abc", "m", "-1m", "1x", "1.m", ".5m", "1 2m", "1mm", "1e3", "0x10"})
  void refusesNonSizesNamingTheField(String text) {
    assertThatThrownBy(() -> Sizes.parse("tmpSize", text))
        .isExactlyInstanceOf(ConfigException.class)
        .hasMessageStartingWith("tmpSize '" + text + "' is not a size")
        .hasMessageContaining("512m");
  }

  @ParameterizedTest
  @ValueSource(strings = {"9999999t", "5000000t", "99999999999999999999"})
  void refusesHugeSizes(String text) {
    assertThatThrownBy(() -> Sizes.parse("memory", text))
        .isExactlyInstanceOf(ConfigException.class)
        .hasMessageContaining("memory '")
        .hasMessageContaining("too large");
  }

  @Test
  void refusesSizesThatOverflowADouble() {
    String text = "1" + "0".repeat(400) + "k";
    assertThatThrownBy(() -> Sizes.parse("memory", text))
        .isExactlyInstanceOf(ConfigException.class)
        .hasMessageContaining("too large");
  }

  @ParameterizedTest
  @CsvSource({
    "0, 0",
    "1, 1",
    "1000, 1000",
    "1023, 1023",
    "1024, 1k",
    "1536, 1536",
    "2048, 2k",
    "1048576, 1m",
    "1572864, 1536k",
    "536870912, 512m",
    "1073741824, 1g",
    "1610612736, 1536m",
    "10737418240, 10g",
    "1099511627776, 1024g"
  })
  void formatsWithTheLargestExactUnit(long bytes, String expected) {
    assertThat(Sizes.format(bytes)).isEqualTo(expected);
  }

  @Property(tries = 300)
  void formatThenParseRoundTrips(@ForAll @LongRange(min = 0, max = 1L << 52) long bytes) {
    assertThat(Sizes.parse("size", Sizes.format(bytes))).isEqualTo(bytes);
  }

  @Property(tries = 200)
  void unitsMultiplyByPowersOf1024(@ForAll @LongRange(min = 0, max = 1 << 20) long n) {
    assertThat(Sizes.parse("s", n + "k")).isEqualTo(n << 10);
    assertThat(Sizes.parse("s", n + "m")).isEqualTo(n << 20);
    assertThat(Sizes.parse("s", n + "G")).isEqualTo(n << 30);
  }
}
