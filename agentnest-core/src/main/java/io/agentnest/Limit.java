package io.agentnest;

/** Which limit stopped an execution. */
public enum Limit {
  /** Wall time of the execution ran out. */
  TIMEOUT,
  /** Output exceeded the per-execution byte cap. */
  OUTPUT,
  /** The memory limit killed the process. */
  MEMORY,
  /** The process limit was hit. */
  PIDS,
  /** The workspace or scratch space is full. */
  DISK,
  /** The caller cancelled the execution. */
  CANCELLED
}
