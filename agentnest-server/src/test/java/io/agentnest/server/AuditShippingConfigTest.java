package io.agentnest.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.audit.ShippingSink;
import io.agentnest.audit.SyslogTarget.Facility;
import io.agentnest.audit.SyslogTarget.Transport;
import io.agentnest.server.config.AuditShippingConfig;
import io.agentnest.server.config.ServerConfig;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class AuditShippingConfigTest {
  private static final String BOTH =
      """
      audit:
        sinks:
          - type: syslog
            transport: udp
            host: 127.0.0.1
            port: 5514
            facility: local3
            queue: 500
          - type: otlp
            endpoint: http://127.0.0.1:4318
            headers_env: {Authorization: OTLP_AUTH}
            timeout: 5s
            compression: none
      """;

  @Test
  void readsSyslogAndOtlpSinks() {
    AuditShippingConfig a = ServerConfig.parse(BOTH, "server.yaml").audit();
    assertThat(a.sinks()).hasSize(2);
    AuditShippingConfig.Sink syslog = a.sinks().get(0);
    assertThat(syslog.syslog().transport()).isEqualTo(Transport.UDP);
    assertThat(syslog.syslog().facility()).isEqualTo(Facility.LOCAL3);
    assertThat(syslog.syslog().queueCapacity()).isEqualTo(500);
    AuditShippingConfig.Sink otlp = a.sinks().get(1);
    assertThat(otlp.describe()).isEqualTo("otlp+http://127.0.0.1:4318/v1/logs");
    assertThat(otlp.otlp().timeout()).isEqualTo(Duration.ofSeconds(5));
    assertThat(otlp.headersEnv()).containsEntry("Authorization", "OTLP_AUTH");
    assertThat(ServerConfig.parse("", "s.yaml").audit().sinks()).isEmpty();
  }

  @Test
  void secretsComeFromTheEnvironmentAtStart() {
    AuditShippingConfig.Sink otlp = ServerConfig.parse(BOTH, "server.yaml").audit().sinks().get(1);
    assertThatThrownBy(() -> otlp.open(Map.of()))
        .hasMessageContaining("server.yaml: audit.sinks[1]")
        .hasMessageContaining("OTLP_AUTH, which is not set");
    ShippingSink s = otlp.open(Map.of("OTLP_AUTH", "Bearer x"));
    try {
      assertThat(s.stats().target()).isEqualTo("otlp+http://127.0.0.1:4318/v1/logs");
    } finally {
      s.close();
    }
  }

  @Test
  void mistakesNameTheEntryAndTheFix() {
    assertThatThrownBy(() -> parse("- {type: syslog, transport: http, host: h, port: 514}"))
        .hasMessageContaining("audit.sinks[0]")
        .hasMessageContaining("use tls, tcp or udp");
    assertThatThrownBy(() -> parse("- {type: syslog, host: h, port: 70000}"))
        .hasMessageContaining("use 1-65535");
    assertThatThrownBy(() -> parse("- {type: syslog, host: h}"))
        .hasMessageContaining("needs host and port");
    assertThatThrownBy(() -> parse("- {type: otlp, endpoint: \"ftp://x\"}"))
        .hasMessageContaining("http://collector:4318/v1/logs");
    assertThatThrownBy(() -> parse("- {type: otlp, endpoint: \"http://x\", port: 1}"))
        .hasMessageContaining("'port' does not apply to type otlp");
    assertThatThrownBy(() -> parse("- {type: kafka}")).hasMessageContaining("use syslog or otlp");
    assertThatThrownBy(
            () ->
                parse("- {type: otlp, endpoint: \"http://x\", headers_env: {X-Key: \"abc def\"}}"))
        .hasMessageContaining("must name an environment variable");
    assertThatThrownBy(
            () -> parse("- {type: syslog, transport: udp, host: h, port: 1, trust_store: a.p12}"))
        .hasMessageContaining("for transport tls only");
  }

  @Test
  void anUnknownKeyInASinkNamesItsLineAndColumn() {
    assertThatThrownBy(
            () ->
                ServerConfig.parse(
                    "audit:\n  sinks:\n    - type: syslog\n      hots: x\n", "server.yaml"))
        .hasMessageContaining("server.yaml:4:7")
        .hasMessageContaining("'hots'")
        .hasMessageContaining("host");
  }

  private static AuditShippingConfig parse(String sinks) {
    return ServerConfig.parse("audit:\n  sinks:\n    " + sinks + "\n", "server.yaml").audit();
  }
}
