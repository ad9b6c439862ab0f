package io.agentnest.internal.pool;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.agentnest.AgentNestException;
import io.agentnest.ConfigException;
import io.agentnest.PoolExhaustedException;
import io.agentnest.PoolOptions;
import io.agentnest.PoolOptions.Exhaustion;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.Secret;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/** The pool's accounting over fake members (the real ones: agentnest-docker's PoolIT). */
class WarmPoolTest {
  private static final SandboxConfig TEMPLATE = SandboxConfig.defaults();

  /** Members are numbers; the fake records what happened to each. */
  static final class FakeMembers implements Members<Integer> {
    final AtomicInteger next = new AtomicInteger();
    final Set<Integer> dead = ConcurrentHashMap.newKeySet();
    final Set<Integer> destroyed = ConcurrentHashMap.newKeySet();
    final Set<Integer> handedOut = ConcurrentHashMap.newKeySet();
    final AtomicInteger doubleHandOuts = new AtomicInteger();
    final AtomicInteger failHandOuts = new AtomicInteger();
    final AtomicInteger failStarts = new AtomicInteger();
    final List<SandboxConfig> handOutConfigs = new ArrayList<>();

    @Override
    public Integer start() {
      if (failStarts.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
        throw new AgentNestException("engine refused");
      }
      return next.incrementAndGet();
    }

    @Override
    public boolean alive(Integer member) {
      return !dead.contains(member) && !destroyed.contains(member);
    }

    @Override
    public void destroy(Integer member) {
      destroyed.add(member);
    }

    @Override
    public synchronized Sandbox handOut(Integer member, SandboxConfig config, Runnable onRelease) {
      if (!handedOut.add(member) || destroyed.contains(member)) {
        doubleHandOuts.incrementAndGet();
      }
      if (failHandOuts.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
        throw new AgentNestException("agent did not answer");
      }
      handOutConfigs.add(config);
      return fakeSandbox(
          member,
          () -> {
            destroyed.add(member);
            onRelease.run();
          });
    }
  }

  static Sandbox fakeSandbox(int member, Runnable close) {
    AtomicBoolean closed = new AtomicBoolean();
    return (Sandbox)
        Proxy.newProxyInstance(
            Sandbox.class.getClassLoader(),
            new Class<?>[] {Sandbox.class},
            (proxy, method, args) ->
                switch (method.getName()) {
                  case "id" -> "member-" + member;
                  case "close", "destroy" -> {
                    if (closed.compareAndSet(false, true)) {
                      close.run();
                    }
                    yield null;
                  }
                  case "hashCode" -> System.identityHashCode(proxy);
                  case "equals" -> proxy == args[0];
                  case "toString" -> "fake-" + member;
                  default -> throw new UnsupportedOperationException(method.getName());
                });
  }

  private static WarmPool<Integer> pool(FakeMembers m, PoolOptions o, AtomicLong clock) {
    return new WarmPool<>(TEMPLATE, o, m, clock::get, false, () -> {});
  }

  private static WarmPool<Integer> pool(FakeMembers m, PoolOptions o) {
    return new WarmPool<>(TEMPLATE, o, m, System::nanoTime, false, () -> {});
  }

  /** Bounded wait for the background refill (not a timing assertion: it fails only on a hang). */
  private static void awaitTrue(BooleanSupplier cond) throws InterruptedException {
    for (int i = 0; i < 1000 && !cond.getAsBoolean(); i++) {
      Thread.sleep(10);
    }
    assertThat(cond.getAsBoolean()).as("condition within 10 s").isTrue();
  }

  @Test
  void anAcquireTakesAWaitingMemberAndTheRefillReplacesIt() throws Exception {
    FakeMembers m = new FakeMembers();
    try (WarmPool<Integer> p = pool(m, PoolOptions.builder().minIdle(2).build())) {
      awaitTrue(() -> p.stats().idle() == 2);
      try (Sandbox sb = p.acquire()) {
        assertThat(sb.id()).isIn("member-1", "member-2");
        awaitTrue(() -> p.stats().idle() == 2);
        assertThat(p.stats().inUse()).isEqualTo(1);
        assertThat(p.stats().started()).isEqualTo(3);
      }
      assertThat(p.stats().inUse()).isZero();
    }
  }

  @Test
  void closingAHandedOutSandboxDestroysItAndItIsNeverHandedOutAgain() throws Exception {
    FakeMembers m = new FakeMembers();
    try (WarmPool<Integer> p = pool(m, PoolOptions.builder().minIdle(1).maxTotal(2).build())) {
      awaitTrue(() -> p.stats().idle() == 1);
      Sandbox first = p.acquire();
      first.close();
      assertThat(m.destroyed).contains(1);
      for (int i = 0; i < 5; i++) {
        p.acquire().close();
      }
      assertThat(m.doubleHandOuts).hasValue(0);
      assertThat(m.handedOut).hasSize(6);
    }
  }

  @Test
  void exhaustionFailsAtOnceWithAClearErrorWhenConfiguredToFail() throws Exception {
    FakeMembers m = new FakeMembers();
    PoolOptions o =
        PoolOptions.builder().minIdle(1).maxTotal(1).onExhausted(Exhaustion.FAIL).build();
    try (WarmPool<Integer> p = pool(m, o)) {
      awaitTrue(() -> p.stats().idle() == 1);
      try (Sandbox held = p.acquire()) {
        assertThatThrownBy(p::acquire)
            .isInstanceOf(PoolExhaustedException.class)
            .hasMessage(
                "pool 'default' has all of its max_total 1 sandboxes handed out or starting"
                    + " (on_exhausted is fail): close sandboxes you no longer need, raise"
                    + " max_total, or set on_exhausted: wait with a longer max_wait");
      }
    }
  }

  @Test
  void exhaustionWaitsUntilASandboxIsClosed() throws Exception {
    FakeMembers m = new FakeMembers();
    PoolOptions o =
        PoolOptions.builder().minIdle(0).maxTotal(1).maxWait(Duration.ofMinutes(5)).build();
    ExecutorService ex = Executors.newSingleThreadExecutor();
    try (WarmPool<Integer> p = pool(m, o)) {
      Sandbox held = p.acquire();
      CountDownLatch waiting = new CountDownLatch(1);
      Future<Sandbox> second =
          ex.submit(
              () -> {
                waiting.countDown();
                return p.acquire();
              });
      waiting.await();
      awaitTrue(() -> p.stats().inUse() == 1);
      assertThat(second.isDone()).isFalse();
      held.close();
      try (Sandbox got = second.get(30, TimeUnit.SECONDS)) {
        assertThat(got.id()).isEqualTo("member-2");
      }
    } finally {
      ex.shutdownNow();
    }
  }

  @Test
  void exhaustionGivesUpAfterMaxWait() {
    FakeMembers m = new FakeMembers();
    AtomicLong clock = new AtomicLong();
    PoolOptions o = PoolOptions.builder().minIdle(0).maxTotal(1).maxWait(Duration.ZERO).build();
    try (WarmPool<Integer> p = pool(m, o, clock)) {
      Sandbox held = p.acquire();
      assertThatThrownBy(p::acquire)
          .isInstanceOf(PoolExhaustedException.class)
          .hasMessageContaining("none came free within max_wait PT0S");
      held.close();
    }
  }

  @Test
  void aMemberThatDiedWhileWaitingIsDestroyedAndReplacedNotHandedOut() throws Exception {
    FakeMembers m = new FakeMembers();
    try (WarmPool<Integer> p = pool(m, PoolOptions.builder().minIdle(1).build())) {
      awaitTrue(() -> p.stats().idle() == 1);
      m.dead.add(1);
      p.maintain();
      assertThat(m.destroyed).contains(1);
      awaitTrue(() -> p.stats().idle() == 1);
      try (Sandbox sb = p.acquire()) {
        assertThat(sb.id()).isEqualTo("member-2");
      }
      assertThat(p.stats().replaced()).isEqualTo(1);
    }
  }

  @Test
  void aDeadMemberFoundAtAcquireIsSkipped() throws Exception {
    FakeMembers m = new FakeMembers();
    try (WarmPool<Integer> p = pool(m, PoolOptions.builder().minIdle(2).build())) {
      awaitTrue(() -> p.stats().idle() == 2);
      m.dead.add(1);
      try (Sandbox sb = p.acquire()) {
        assertThat(sb.id()).isEqualTo("member-2");
      }
      assertThat(m.destroyed).contains(1);
    }
  }

  @Test
  void membersWaitingPastIdleTtlAreReplaced() throws Exception {
    FakeMembers m = new FakeMembers();
    AtomicLong clock = new AtomicLong();
    PoolOptions o = PoolOptions.builder().minIdle(1).idleTtl(Duration.ofMinutes(1)).build();
    try (WarmPool<Integer> p = pool(m, o, clock)) {
      awaitTrue(() -> p.stats().idle() == 1);
      clock.addAndGet(Duration.ofSeconds(59).toNanos());
      p.maintain();
      assertThat(m.destroyed).isEmpty();
      clock.addAndGet(Duration.ofSeconds(1).toNanos());
      p.maintain();
      assertThat(m.destroyed).containsExactly(1);
      awaitTrue(() -> p.stats().idle() == 1 && m.next.get() == 2);
    }
  }

  @Test
  void aFailedHandOutDestroysThatMemberAndTakesAnother() throws Exception {
    FakeMembers m = new FakeMembers();
    try (WarmPool<Integer> p = pool(m, PoolOptions.builder().minIdle(2).build())) {
      awaitTrue(() -> p.stats().idle() == 2);
      m.failHandOuts.set(1);
      try (Sandbox sb = p.acquire()) {
        assertThat(sb.id()).isEqualTo("member-2");
      }
      assertThat(m.destroyed).contains(1);
      assertThat(p.stats().failed()).isEqualTo(1);
      assertThat(p.stats().inUse()).isZero();
    }
  }

  @Test
  void aRefillThatFailsBacksOffAndTheAcquireStartsItsOwn() throws Exception {
    FakeMembers m = new FakeMembers();
    m.failStarts.set(1);
    AtomicLong clock = new AtomicLong();
    try (WarmPool<Integer> p = pool(m, PoolOptions.builder().minIdle(1).build(), clock)) {
      awaitTrue(() -> p.stats().failed() == 1 && p.stats().starting() == 0);
      assertThat(p.stats().idle()).isZero(); // backing off: the fake clock stands still
      try (Sandbox sb = p.acquire()) {
        assertThat(sb.id()).isEqualTo("member-1");
      }
      clock.addAndGet(Duration.ofMinutes(1).toNanos());
      p.maintain();
      awaitTrue(() -> p.stats().idle() == 1);
    }
  }

  @Test
  void closeDestroysWaitingMembersAndRefusesLaterAcquires() throws Exception {
    FakeMembers m = new FakeMembers();
    WarmPool<Integer> p = pool(m, PoolOptions.builder().minIdle(3).build());
    awaitTrue(() -> p.stats().idle() == 3);
    p.close();
    assertThat(m.destroyed).containsExactlyInAnyOrder(1, 2, 3);
    assertThatThrownBy(p::acquire).hasMessageContaining("pool 'default' is closed");
  }

  @Test
  void perUseSettingsStillMatchButAnotherShapeIsRefused() {
    FakeMembers m = new FakeMembers();
    try (WarmPool<Integer> p = pool(m, PoolOptions.builder().minIdle(0).build())) {
      SandboxConfig perUse =
          TEMPLATE.toBuilder()
              .env("MODE", "test")
              .secretEnv("TOKEN", Secret.of("s3cr3t-value"))
              .ttl(Duration.ofMinutes(2))
              .build();
      assertThat(p.matches(perUse)).isTrue();
      try (Sandbox sb = p.acquire(perUse)) {
        assertThat(m.handOutConfigs).containsExactly(perUse);
      }
      for (SandboxConfig other :
          List.of(
              TEMPLATE.toBuilder().memory("1g").build(),
              TEMPLATE.toBuilder().image("other:latest").build(),
              TEMPLATE.toBuilder().runtime("runsc").build(),
              TEMPLATE.toBuilder().tenant("search").build(),
              TEMPLATE.toBuilder().label("team", "a").build(),
              TEMPLATE.toBuilder().backend("kubernetes").build())) {
        assertThat(p.matches(other)).as(other.toString()).isFalse();
        assertThatThrownBy(() -> p.acquire(other))
            .isInstanceOf(ConfigException.class)
            .hasMessageContaining("shapes another sandbox than pool 'default' keeps");
      }
    }
  }

  /**
   * Any number of concurrent users, any pool size: no member is handed out twice, never more than
   * max_total are out at once, and every acquire either gets one or is told the pool is exhausted.
   */
  @Property(tries = 25)
  void concurrentAcquiresNeverShareAMemberNorExceedMaxTotal(
      @ForAll @IntRange(min = 1, max = 8) int threads,
      @ForAll @IntRange(min = 0, max = 3) int minIdle,
      @ForAll @IntRange(min = 3, max = 6) int maxTotal,
      @ForAll boolean failWhenExhausted)
      throws Exception {
    FakeMembers m = new FakeMembers();
    PoolOptions o =
        PoolOptions.builder()
            .minIdle(minIdle)
            .maxTotal(maxTotal)
            .onExhausted(failWhenExhausted ? Exhaustion.FAIL : Exhaustion.WAIT)
            .maxWait(Duration.ofSeconds(30))
            .build();
    AtomicInteger out = new AtomicInteger();
    AtomicInteger maxOut = new AtomicInteger();
    AtomicInteger exhausted = new AtomicInteger();
    ExecutorService ex = Executors.newFixedThreadPool(threads);
    try (WarmPool<Integer> p = pool(m, o)) {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        done.add(
            ex.submit(
                () -> {
                  for (int i = 0; i < 20; i++) {
                    try (Sandbox sb = p.acquire()) {
                      maxOut.accumulateAndGet(out.incrementAndGet(), Math::max);
                      out.decrementAndGet();
                    } catch (PoolExhaustedException e) {
                      exhausted.incrementAndGet();
                    }
                  }
                  return null;
                }));
      }
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
      assertThat(m.doubleHandOuts).hasValue(0);
      assertThat(maxOut.get()).isLessThanOrEqualTo(maxTotal);
      assertThat(m.handedOut.size() + exhausted.get()).isEqualTo(threads * 20);
      if (!failWhenExhausted) {
        assertThat(exhausted).hasValue(0);
      }
      assertThat(p.stats().inUse()).isZero();
      assertThat(p.stats().total()).isLessThanOrEqualTo(maxTotal);
    } finally {
      ex.shutdownNow();
    }
    assertThat(m.destroyed).hasSize(m.next.get()); // close left no member behind
  }
}
