package io.agentnest.spi.support;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class StartTraceTest {
  @Test
  void theStepsMarkedWhileATraceRunsComeBackInOrder() {
    StartTrace t = StartTrace.begin();
    StartTrace.mark("engine create");
    StartTrace.mark("agent ready");
    List<StartTrace.Step> steps = t.end();
    assertThat(steps)
        .extracting(StartTrace.Step::name)
        .containsExactly("engine create", "agent ready");
    assertThat(steps).allSatisfy(s -> assertThat(s.millis()).isNotNegative());
  }

  @Test
  void aMarkWithoutATraceOrAfterItsEndRecordsNothing() {
    StartTrace.mark("nobody listens");
    StartTrace t = StartTrace.begin();
    List<StartTrace.Step> steps = t.end();
    StartTrace.mark("too late");
    assertThat(steps).isEmpty();
    assertThat(t.end()).isEmpty();
  }

  @Test
  void anotherThreadsMarksStayOutOfThisThreadsTrace() throws InterruptedException {
    StartTrace t = StartTrace.begin();
    AtomicReference<List<StartTrace.Step>> theirs = new AtomicReference<>();
    Thread other =
        new Thread(
            () -> {
              StartTrace own = StartTrace.begin();
              StartTrace.mark("their step");
              theirs.set(own.end());
            });
    other.start();
    other.join(10_000);
    StartTrace.mark("our step");
    assertThat(t.end()).extracting(StartTrace.Step::name).containsExactly("our step");
    assertThat(theirs.get()).extracting(StartTrace.Step::name).containsExactly("their step");
  }
}
