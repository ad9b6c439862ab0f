package io.agentnest.cli;

import java.lang.reflect.Proxy;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

/**
 * Follows this terminal's window size for {@code agentnest shell}: woken by SIGWINCH where the JVM
 * lets a handler be installed (HotSpot on Linux, through {@code sun.misc.Signal}, reached by
 * reflection as it is not part of the platform API), else by polling the size once a second.
 */
final class WindowWatch {
  static final long POLL_MS = 1000;

  private final Semaphore changed = new Semaphore(0);
  private final Thread thread;
  private volatile boolean stopped;

  private WindowWatch(TtyMode tty, TtyMode.Size initial, BiConsumer<Integer, Integer> resize) {
    boolean signalled = onWinch(changed::release);
    // One look right away: a resize between reading the first size and installing the handler
    // sent its SIGWINCH to nobody.
    changed.release();
    this.thread =
        new Thread(
            () -> {
              TtyMode.Size last = initial;
              while (!stopped) {
                try {
                  if (signalled) {
                    changed.acquire();
                  } else {
                    changed.tryAcquire(POLL_MS, TimeUnit.MILLISECONDS);
                  }
                } catch (InterruptedException e) {
                  return;
                }
                changed.drainPermits();
                TtyMode.Size now = tty.size();
                if (!stopped && !now.equals(last)) {
                  last = now;
                  resize.accept(now.rows(), now.cols());
                }
              }
            },
            "agentnest-window");
    thread.setDaemon(true);
  }

  static WindowWatch start(TtyMode tty, TtyMode.Size initial, BiConsumer<Integer, Integer> resize) {
    WindowWatch w = new WindowWatch(tty, initial, resize);
    w.thread.start();
    return w;
  }

  void stop() {
    stopped = true;
    thread.interrupt();
  }

  /** Installs {@code r} as the SIGWINCH handler; false where that is not possible. */
  private static boolean onWinch(Runnable r) {
    try {
      Class<?> signal = Class.forName("sun.misc.Signal");
      Class<?> handler = Class.forName("sun.misc.SignalHandler");
      Object winch = signal.getConstructor(String.class).newInstance("WINCH");
      Object h =
          Proxy.newProxyInstance(
              handler.getClassLoader(),
              new Class<?>[] {handler},
              (proxy, method, args) -> {
                switch (method.getName()) {
                  case "handle" -> r.run();
                  case "hashCode" -> {
                    return System.identityHashCode(proxy);
                  }
                  case "equals" -> {
                    return args != null && args.length == 1 && proxy == args[0];
                  }
                  case "toString" -> {
                    return "agentnest-winch";
                  }
                  default -> {}
                }
                return null;
              });
      signal.getMethod("handle", signal, handler).invoke(null, winch, h);
      return true;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError unavailable) {
      return false;
    }
  }
}
