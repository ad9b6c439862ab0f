package io.agentnest.cli;

import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

/**
 * The CLI's progress bars: on stderr (stdout carries results and --json), in ASCII (terminals and
 * CI logs alike).
 */
final class Progress {
  private Progress() {}

  /** A bar of {@code steps} steps named {@code task}. */
  static ProgressBar bar(String task, long steps) {
    return builder(task, steps).build();
  }

  /** As {@link #bar}, to be finished by the caller (units, an unknown total: {@code -1}). */
  static ProgressBarBuilder builder(String task, long steps) {
    return new ProgressBarBuilder()
        .setTaskName(task)
        .setInitialMax(steps)
        .setStyle(ProgressBarStyle.ASCII)
        .setConsumer(new ConsoleProgressBarConsumer(System.err));
  }
}
