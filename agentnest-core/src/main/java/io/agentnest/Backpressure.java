package io.agentnest;

/**
 * What a streamed execution does when its consumer is slower than the sandbox produces. Either way
 * host memory stays bounded by the stream buffer ({@link ExecOptions.Builder#streamBuffer}).
 */
public enum Backpressure {
  /**
   * Buffer, then pause the producer: the sandbox's channel stops being read until the consumer
   * catches up, so the program in the sandbox blocks on its writes. Other calls on the same sandbox
   * wait too. Nothing is lost. The default.
   */
  BLOCK,
  /**
   * Buffer, then drop output chunks; a {@link ExecEvent.Dropped} event with the number of bytes
   * lost precedes the next delivered event. The sandbox never waits. The final result still holds
   * the full output up to the output cap.
   */
  DROP
}
