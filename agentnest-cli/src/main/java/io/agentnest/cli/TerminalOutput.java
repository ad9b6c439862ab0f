package io.agentnest.cli;

import io.agentnest.text.TerminalFilter;
import java.io.PrintStream;
import java.util.ArrayDeque;
import java.util.Deque;
import org.jspecify.annotations.Nullable;

/**
 * Where {@code agentnest run} writes what the sandbox prints. Two protections for the person at the
 * terminal, who may be answering an approval question on the same screen:
 *
 * <ul>
 *   <li>While a question is open the sandbox's output is held (up to {@link #HOLD_LIMIT} bytes,
 *       then the sandbox waits, as with a slow terminal) and printed after the answer, so nothing
 *       the sandbox prints can land between the question and the answer.
 *   <li>A stream that is a terminal gets the sandbox's bytes through a {@link TerminalFilter}: no
 *       cursor movement, repainting, clipboard (OSC 52), title, clearing or {@code \r} overwrites.
 *       {@code --raw} turns that off; pipes and files always get the bytes as they are.
 * </ul>
 */
final class TerminalOutput implements OpenQuestions {
  /** Most bytes held while a question is open before the producer has to wait. */
  static final int HOLD_LIMIT = 1 << 20;

  private record Held(boolean err, byte[] data) {}

  private final PrintStream out;
  private final PrintStream err;
  private final @Nullable TerminalFilter outFilter;
  private final @Nullable TerminalFilter errFilter;
  private final Deque<Held> held = new ArrayDeque<>();
  private int heldBytes;
  private boolean holding;

  /**
   * @param neutraliseOut whether {@code out} is a terminal whose control sequences must be defused
   * @param neutraliseErr the same for {@code err}
   */
  TerminalOutput(PrintStream out, PrintStream err, boolean neutraliseOut, boolean neutraliseErr) {
    this.out = out;
    this.err = err;
    this.outFilter = neutraliseOut ? new TerminalFilter() : null;
    this.errFilter = neutraliseErr ? new TerminalFilter() : null;
  }

  /** Bytes the sandbox wrote to its stdout ({@code toErr} false) or stderr. */
  synchronized void write(boolean toErr, byte[] data) {
    TerminalFilter f = toErr ? errFilter : outFilter;
    byte[] shown = f == null ? data : f.feed(data, 0, data.length);
    if (shown.length == 0) {
      return;
    }
    boolean interrupted = false;
    while (holding && heldBytes > 0 && heldBytes + shown.length > HOLD_LIMIT) {
      try {
        wait();
      } catch (InterruptedException e) {
        // Keep the bytes (held beyond the limit) rather than lose them; re-flag on the way out.
        interrupted = true;
        break;
      }
    }
    if (holding) {
      held.addLast(new Held(toErr, shown));
      heldBytes += shown.length;
    } else {
      emit(toErr, shown);
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public synchronized void changed(boolean anyOpen) {
    holding = anyOpen;
    if (!anyOpen) {
      drain();
      notifyAll();
    }
  }

  /** At the end of the run: what is still held, and what the filters kept back. */
  synchronized void finish() {
    holding = false;
    drain();
    if (outFilter != null) {
      emit(false, outFilter.finish());
    }
    if (errFilter != null) {
      emit(true, errFilter.finish());
    }
    notifyAll();
  }

  private void drain() {
    Held h;
    while ((h = held.pollFirst()) != null) {
      emit(h.err(), h.data());
    }
    heldBytes = 0;
  }

  private void emit(boolean toErr, byte[] data) {
    if (data.length == 0) {
      return;
    }
    PrintStream target = toErr ? err : out;
    target.write(data, 0, data.length);
    target.flush();
  }
}
