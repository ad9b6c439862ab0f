package io.agentnest.audit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.audit.SyslogTarget.Facility;
import io.agentnest.audit.SyslogTarget.Transport;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ShippingTargetsTest {
  @Test
  void syslogDefaults() {
    SyslogTarget t = SyslogTarget.builder().tls("logs.example.org", 6514).build();
    assertThat(t.facility()).isEqualTo(Facility.AUTHPRIV);
    assertThat(t.queueCapacity()).isEqualTo(10_000);
    assertThat(t.maxMessageBytes()).isEqualTo(65_536);
    assertThat(t.describe()).isEqualTo("syslog+tls://logs.example.org:6514");
    assertThat(SyslogTarget.builder().udp("h", 514).build().maxMessageBytes()).isEqualTo(2048);
  }

  @Test
  void syslogRefusesBadValuesNamingTheFix(@TempDir Path dir) {
    assertThatThrownBy(() -> SyslogTarget.builder().tcp("h", 0).build())
        .hasMessageContaining("use 1-65535");
    assertThatThrownBy(() -> SyslogTarget.builder().tcp("bad host", 514).build())
        .hasMessageContaining("not a host name");
    assertThatThrownBy(() -> SyslogTarget.builder().build()).hasMessageContaining("tls(host");
    assertThatThrownBy(() -> SyslogTarget.builder().udp("h", 514).queueCapacity(0).build())
        .hasMessageContaining("1-1000000");
    assertThatThrownBy(() -> Transport.parse("http")).hasMessageContaining("tls, tcp or udp");
    assertThatThrownBy(() -> Facility.parse("nope")).hasMessageContaining("authpriv");
    assertThat(Facility.parse("local3")).isEqualTo(Facility.LOCAL3);
    assertThat(Facility.parse("10")).isEqualTo(Facility.AUTHPRIV);
    assertThatThrownBy(
            () ->
                SyslogTarget.builder()
                    .tls("h", 6514)
                    .trustStore(dir.resolve("missing.p12"), "PKCS12", null))
        .hasMessageContaining("check the path");
  }

  @Test
  void otlpAddsThePathAndHidesHeaderValues() {
    OtlpTarget t = OtlpTarget.builder("http://collector:4318").header("X-Token", "s3cret").build();
    assertThat(t.endpoint().toString()).isEqualTo("http://collector:4318/v1/logs");
    assertThat(t.toString()).contains("X-Token").doesNotContain("s3cret");
    assertThat(t.compression()).isEqualTo("gzip");
    assertThatThrownBy(() -> OtlpTarget.builder("ftp://x/").build())
        .hasMessageContaining("http://collector:4318/v1/logs");
    assertThatThrownBy(() -> OtlpTarget.builder("http://x").compression("zstd").build())
        .hasMessageContaining("gzip or none");
    assertThatThrownBy(() -> OtlpTarget.builder("http://x").header("a b", "v").build())
        .hasMessageContaining("header name");
  }
}
