package io.agentnest.internal.approval;

/**
 * The clock of the call a Python question belongs to: the time a person takes to decide does not
 * count against the call's deadline, so a question pauses it while it waits.
 */
public interface AskClock {
  /** A question starts waiting; returns the moment, for {@link #askEnded}. */
  long askStarted();

  /** The question that started waiting at {@code t0} was decided. */
  void askEnded(long t0);
}
