package io.agentnest.cli;

/**
 * Told when the terminal starts asking approval questions and when the last open one is answered or
 * given up, so whatever shares the terminal (the sandbox's live output) can stay quiet meanwhile.
 */
@FunctionalInterface
interface OpenQuestions {
  OpenQuestions NONE = open -> {};

  void changed(boolean anyOpen);
}
