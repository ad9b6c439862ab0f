package io.agentnest.server.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.server.config.ServerConfig;
import io.agentnest.server.http.ApiException;
import io.agentnest.server.tenancy.Tenant;
import java.util.List;
import org.junit.jupiter.api.Test;

class PoliciesTest {
  @Test
  void askHostsAreNarrowedByATenant() {
    ServerConfig none = ServerConfig.parse("", "server.yaml");
    Tenant open = new Tenant("a", 2, 1L << 30, 2, 10, null, null);
    // Nothing may be asked by default: a create with askUnknownHosts is refused (422).
    assertThatThrownBy(() -> Policies.effective(none.policy(), open).checkAsk())
        .hasMessageContaining("askUnknownHosts")
        .isInstanceOfSatisfying(
            ApiException.class, e -> assertThat(e.fix()).contains("ask_hosts is empty"));

    ServerConfig c =
        ServerConfig.parse(
            """
            policy:
              ask_hosts: ["*.example.org", docs.test]
              allow_addresses: [10.20.0.0/16]
            """,
            "server.yaml");
    Policies.Effective p = Policies.effective(c.policy(), open);
    p.checkAsk();
    assertThat(p.mayAsk("a.example.org")).isTrue();
    assertThat(p.mayAsk("docs.test")).isTrue();
    assertThat(p.mayAsk("example.org")).isFalse();
    assertThat(p.mayAsk("evil-example.org")).isFalse();
    assertThat(p.mayAsk("other.test")).isFalse();
    // A tenant with a host list of its own may only be asked about hosts within it too.
    Tenant narrow = new Tenant("b", 2, 1L << 30, 2, 10, null, List.of("a.example.org"));
    Policies.Effective q = Policies.effective(c.policy(), narrow);
    assertThat(q.mayAsk("a.example.org")).isTrue();
    assertThat(q.mayAsk("b.example.org")).isFalse();
    assertThat(q.mayAsk("docs.test")).isFalse();
    assertThat(
            Policies.effective(
                    ServerConfig.parse("policy: {ask_hosts: [\"*\"]}", "s.yaml").policy(), open)
                .mayAsk("anything.example"))
        .isTrue();
  }
}
