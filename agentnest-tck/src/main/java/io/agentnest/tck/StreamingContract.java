package io.agentnest.tck;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.ExecEvent;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.Limit;
import io.agentnest.Sandbox;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Output as it is produced, concurrent calls on one sandbox, cancellation. */
public interface StreamingContract extends BackendTarget {

  @Test
  default void outputArrivesInOrderBeforeTheCallFinishes(@Shared Sandbox sb) {
    // Line 2 is printed only after the host has seen line 1: the test, not a clock, proves it.
    Execution e =
        sb.start(
            "echo one; i=0; while [ ! -f /tmp/streaming-go ] && [ $i -lt 300 ]; do"
                + " sleep 0.1; i=$((i+1)); done; echo two",
            ExecOptions.builder().timeout(Duration.ofSeconds(60)).build());
    List<String> texts = new ArrayList<>();
    ExecResult last = null;
    for (ExecEvent event : e) {
      if (event instanceof ExecEvent.Output o) {
        texts.add(o.chunk().text());
        if (o.chunk().text().contains("one")) {
          sb.exec("touch /tmp/streaming-go");
        }
      } else if (event instanceof ExecEvent.Finished f) {
        last = f.result();
      }
    }
    assertThat(String.join("", texts)).isEqualTo("one\ntwo\n");
    assertThat(last).isNotNull().extracting(ExecResult::exitCode).isEqualTo(0);
  }

  @Test
  default void twoCallsRunAtOnceOnOneSandbox(@Shared Sandbox sb) throws Exception {
    ExecOptions bounded = ExecOptions.builder().timeout(Duration.ofSeconds(30)).build();
    CompletableFuture<ExecResult> waiter =
        sb.execAsync(
            "i=0; while [ ! -f /tmp/streaming-b ] && [ $i -lt 250 ]; do sleep 0.1;"
                + " i=$((i+1)); done; test -f /tmp/streaming-b && echo met",
            bounded);
    CompletableFuture<ExecResult> other = sb.execAsync("touch /tmp/streaming-b", bounded);
    assertThat(other.get(60, TimeUnit.SECONDS).exitCode()).isZero();
    assertThat(waiter.get(60, TimeUnit.SECONDS).stdout()).isEqualTo("met\n");
  }

  @Test
  default void cancellingStopsTheCommandAndKeepsTheSandbox(@Shared Sandbox sb) throws Exception {
    Execution e =
        sb.start(
            "echo started; sleep 120",
            ExecOptions.builder().timeout(Duration.ofMinutes(3)).build());
    for (ExecEvent event : e) {
      if (event instanceof ExecEvent.Output) {
        break;
      }
    }
    e.cancel();
    ExecResult r = e.result().get(60, TimeUnit.SECONDS);
    assertThat(r.limit()).isEqualTo(Limit.CANCELLED);
    assertThat(sb.exec("echo alive").stdout()).isEqualTo("alive\n");
  }
}
