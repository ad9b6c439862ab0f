package io.agentnest.docker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.Backpressure;
import io.agentnest.ExecEvent;
import io.agentnest.ExecOptions;
import io.agentnest.ExecResult;
import io.agentnest.Execution;
import io.agentnest.Limit;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Streaming (iterator, Flow, callback), async calls, cancellation and backpressure. */
@ExtendWith(DockerEngineRequired.class)
class StreamingIT {
  static Sandbox sandbox;

  @BeforeAll
  static void start() {
    sandbox = Sandbox.create(SandboxConfig.builder().label("test", "streaming").build());
  }

  @AfterAll
  static void stop() {
    if (sandbox != null) {
      sandbox.close();
    }
  }

  @Test
  void iteratorDeliversOutputAsProducedThenFinished() {
    List<ExecEvent> events = new ArrayList<>();
    List<Long> arrival = new ArrayList<>();
    long t0 = System.nanoTime();
    for (ExecEvent e :
        sandbox.start("for i in 1 2 3; do echo tick$i; sleep 0.3; done", ExecOptions.defaults())) {
      events.add(e);
      arrival.add((System.nanoTime() - t0) / 1_000_000);
    }
    assertThat(events).last().isInstanceOf(ExecEvent.Finished.class);
    List<String> ticks =
        events.stream()
            .filter(e -> e instanceof ExecEvent.Output)
            .map(e -> ((ExecEvent.Output) e).chunk().text())
            .toList();
    assertThat(String.join("", ticks)).isEqualTo("tick1\ntick2\ntick3\n");
    // The first tick arrived long before the command ended: it was streamed, not collected.
    assertThat(arrival.get(0)).isLessThan(arrival.get(arrival.size() - 1) - 400);
    ExecResult r = ((ExecEvent.Finished) events.get(events.size() - 1)).result();
    assertThat(r.stdout()).isEqualTo("tick1\ntick2\ntick3\n");
  }

  @Test
  void pythonStreamsAndCarriesRichEvents() {
    List<String> kinds = new ArrayList<>();
    Execution ex =
        sandbox.startCode(
            "import time\nfor i in range(3):\n    print(i, flush=True); time.sleep(0.1)\n"
                + "class P:\n    def _repr_html_(self): return '<b>x</b>'\nP()",
            ExecOptions.defaults());
    for (ExecEvent e : ex) {
      kinds.add(e.getClass().getSimpleName());
    }
    assertThat(kinds).startsWith("Output").contains("Rich").endsWith("Finished");
    assertThat(ex.result().join().rich()).extracting(r -> r.mimeType()).contains("text/html");
  }

  @Test
  void flowSubscriberGetsEventsWithDemandRespected() throws Exception {
    Execution ex = sandbox.start("seq 1 2000", ExecOptions.defaults());
    CountDownLatch done = new CountDownLatch(1);
    StringBuilder text = new StringBuilder();
    AtomicLong outstanding = new AtomicLong();
    List<Throwable> errors = new ArrayList<>();
    ex.subscribe(
        new Flow.Subscriber<>() {
          Flow.Subscription sub;

          @Override
          public void onSubscribe(Flow.Subscription s) {
            sub = s;
            outstanding.set(1);
            s.request(1);
          }

          @Override
          public void onNext(ExecEvent e) {
            if (outstanding.decrementAndGet() < 0) {
              errors.add(new AssertionError("delivered beyond demand"));
            }
            if (e instanceof ExecEvent.Output o) {
              text.append(o.chunk().text());
            }
            outstanding.incrementAndGet();
            sub.request(1);
          }

          @Override
          public void onError(Throwable t) {
            errors.add(t);
            done.countDown();
          }

          @Override
          public void onComplete() {
            done.countDown();
          }
        });
    assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
    assertThat(errors).isEmpty();
    assertThat(text.toString().lines()).hasSize(2000).startsWith("1").endsWith("2000");
    assertThat(ex.result().join().exitCode()).isZero();
  }

  @Test
  void asyncCallsRunConcurrentlyOnOneChannel() {
    List<CompletableFuture<ExecResult>> all = new ArrayList<>();
    for (int i = 0; i < 8; i++) {
      all.add(sandbox.execAsync("sleep 0.5; echo " + i, ExecOptions.defaults()));
    }
    all.add(sandbox.runCodeAsync("6 * 7", ExecOptions.defaults()));
    CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
    for (int i = 0; i < 8; i++) {
      assertThat(all.get(i).join().stdout()).isEqualTo(i + "\n");
    }
    assertThat(all.get(8).join().result()).isEqualTo("42");
  }

  @Test
  void cancellingTheFutureStopsTheCommandInTheSandbox() throws Exception {
    CompletableFuture<ExecResult> f =
        sandbox.execAsync("echo started > /tmp/cancel-marker; sleep 60", ExecOptions.defaults());
    Thread.sleep(500);
    f.cancel(true);
    assertThatThrownBy(f::join).isInstanceOf(CancellationException.class);
    // The sleep is gone from the sandbox, not just forgotten by the host.
    for (int i = 0; i < 50; i++) {
      if (sandbox.exec("pgrep -x sleep || true").stdout().isBlank()) {
        break;
      }
      Thread.sleep(100);
    }
    assertThat(sandbox.exec("pgrep -x sleep || true").stdout()).isBlank();
  }

  @Test
  void cancelInterruptsPythonAndKeepsTheSession() throws Exception {
    sandbox.runCode("kept = 'state'");
    Execution ex =
        sandbox.startCode("import time\nwhile True: time.sleep(0.05)", ExecOptions.defaults());
    Thread.sleep(500);
    ex.cancel();
    ExecResult r = ex.result().get(20, TimeUnit.SECONDS);
    assertThat(r.limit()).isEqualTo(Limit.CANCELLED);
    assertThat(r.error().name()).isEqualTo("KeyboardInterrupt");
    assertThat(sandbox.runCode("kept").result()).isEqualTo("'state'");
  }

  @Test
  void dropPolicyNeverStallsTheSandboxAndMarksWhatWasLost() throws Exception {
    Execution ex =
        sandbox.start(
            "head -c 4000000 /dev/zero | tr '\\0' d",
            ExecOptions.builder().backpressure(Backpressure.DROP).streamBuffer(2).build());
    // Nobody consumes until the command is done: chunks beyond the buffer are dropped.
    ExecResult r = ex.result().get(30, TimeUnit.SECONDS);
    assertThat(r.stdout()).hasSize(4_000_000);
    long dropped = 0;
    long delivered = 0;
    for (ExecEvent e : ex) {
      if (e instanceof ExecEvent.Dropped d) {
        dropped += d.bytes();
      } else if (e instanceof ExecEvent.Output o) {
        delivered += o.chunk().data().length;
      }
    }
    assertThat(dropped).isPositive();
    assertThat(dropped + delivered).isEqualTo(4_000_000);
  }

  @Test
  void blockPolicyPausesTheProducerUntilTheConsumerReads() throws Exception {
    Execution ex =
        sandbox.start(
            "head -c 4000000 /dev/zero | tr '\\0' b",
            ExecOptions.builder()
                .backpressure(Backpressure.BLOCK)
                .streamBuffer(4)
                .timeout(Duration.ofSeconds(60))
                .build());
    Thread.sleep(1000);
    assertThat(ex.result()).as("producer is paused while nobody reads").isNotDone();
    long delivered = 0;
    for (ExecEvent e : ex) {
      if (e instanceof ExecEvent.Output o) {
        delivered += o.chunk().data().length;
      }
      assertThat(e).isNotInstanceOf(ExecEvent.Dropped.class);
    }
    assertThat(delivered).isEqualTo(4_000_000);
  }

  @Test
  void outputCapAppliesToStreamsWithATruncationEvent() {
    boolean truncated = false;
    long delivered = 0;
    for (ExecEvent e :
        sandbox.start("cat /dev/zero", ExecOptions.builder().maxOutputBytes(100_000).build())) {
      if (e instanceof ExecEvent.Truncated) {
        truncated = true;
      }
      if (e instanceof ExecEvent.Output o) {
        delivered += o.chunk().data().length;
      }
      if (e instanceof ExecEvent.Finished f) {
        assertThat(f.result().limit()).isEqualTo(Limit.OUTPUT);
      }
    }
    assertThat(truncated).isTrue();
    assertThat(delivered).isLessThanOrEqualTo(100_000 + 256 * 1024);
  }
}
