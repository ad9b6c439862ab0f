package io.agentnest.tck;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Limit;
import io.agentnest.Sandbox;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Shell commands: exit codes, streams, argv, stdin, env, workdir, timeouts, output caps. */
public interface ExecContract extends BackendTarget {

  @Test
  default void exitCodeAndBothStreamsAreKeptApart(@Shared Sandbox sb) {
    ExecResult r = sb.exec("echo out; echo err >&2; exit 7");
    assertThat(r.exitCode()).isEqualTo(7);
    assertThat(r.stdout()).isEqualTo("out\n");
    assertThat(r.stderr()).isEqualTo("err\n");
    assertThat(r.ok()).isFalse();
  }

  @Test
  default void argvReachesTheProgramWithoutAShell(@Shared Sandbox sb) {
    ExecResult r =
        sb.exec(List.of("printf", "%s|", "a b", "$HOME", "*;rm"), ExecOptions.defaults());
    assertThat(r.stdout()).isEqualTo("a b|$HOME|*;rm|");
  }

  @Test
  default void stdinEnvAndWorkdirReachTheCommand(@Shared Sandbox sb) {
    sb.files().mkdir("exec-contract");
    ExecResult r =
        sb.exec(
            "cat; echo \" $GREETING\"; pwd",
            ExecOptions.builder()
                .stdin("from stdin".getBytes(StandardCharsets.UTF_8))
                .env("GREETING", "hello")
                .workdir("exec-contract")
                .build());
    assertThat(r.stdout()).isEqualTo("from stdin hello\n/workspace/exec-contract\n");
  }

  @Test
  default void aTimeoutStopsTheCommandAndTheSandboxGoesOn(@Shared Sandbox sb) {
    ExecResult r =
        sb.exec("sleep 60", ExecOptions.builder().timeout(Duration.ofSeconds(2)).build());
    assertThat(r.limit()).isEqualTo(Limit.TIMEOUT);
    assertThat(r.ok()).isFalse();
    assertThat(sb.exec("echo alive").stdout()).isEqualTo("alive\n");
  }

  @Test
  default void outputBeyondTheCapIsCutAndSaysSo(@Shared Sandbox sb) {
    ExecResult r =
        sb.exec(
            "head -c 1000000 /dev/zero | tr '\\0' x",
            ExecOptions.builder().maxOutputBytes(64 * 1024L).build());
    assertThat(r.truncated()).isTrue();
    assertThat(r.limit()).isEqualTo(Limit.OUTPUT);
    assertThat(r.stdout().length()).isLessThanOrEqualTo(64 * 1024);
    assertThat(sb.exec("echo after").stdout()).isEqualTo("after\n");
  }

  @Test
  default void commandsRunUnprivilegedOnAReadOnlyRootWithoutNetwork(@Shared Sandbox sb) {
    assertThat(sb.exec("id -u").stdout().strip()).isNotEqualTo("0");
    assertThat(sb.exec("touch /usr/contract-probe").exitCode()).isNotZero();
    // No route off the sandbox. Docker's "none" leaves only lo; a Kubernetes pod always gets an
    // interface from its CRI, which must then lead nowhere: no default route on any interface.
    String interfaces = sb.exec("grep -o '^ *[a-z0-9]*:' /proc/net/dev | tr -d ' :'").stdout();
    if (!interfaces.equals("lo\n")) {
      assertThat(sb.exec("awk 'NR>1 && $2==\"00000000\"' /proc/net/route").stdout())
          .as("IPv4 default routes next to interfaces %s", interfaces)
          .isEmpty();
      assertThat(
              sb.exec(
                      "cat /proc/net/ipv6_route 2>/dev/null"
                          + " | awk '$1 ~ /^0+$/ && $2==\"00\" && $10!=\"lo\"'")
                  .stdout())
          .as("IPv6 default routes next to interfaces %s", interfaces)
          .isEmpty();
    }
    assertThat(sb.exec("grep CapEff /proc/self/status").stdout()).contains("0000000000000000");
  }
}
