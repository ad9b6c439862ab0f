package io.agentnest.spi.support;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.time.Instant;

/**
 * Who this host process is: the owner recorded on the sandboxes it creates ({@code
 * io.agentnest.spi.Labels#OWNER}, host state) and the actor of its audit records. {@code prune}
 * compares an owner with the running processes of this host to find sandboxes whose owner is gone.
 */
public final class HostProcess {
  private HostProcess() {}

  /** Host name, pid and process start time, e.g. {@code build-7:4242:1733300000000}. */
  public static String ownerId() {
    ProcessHandle self = ProcessHandle.current();
    // The start time tells a reused pid from the process that had it before.
    long start =
        self.info()
            .startInstant()
            .map(Instant::toEpochMilli)
            .orElse(ManagementFactory.getRuntimeMXBean().getStartTime());
    return hostName() + ":" + self.pid() + ":" + start;
  }

  /** This host's name, or {@code unknown} when it cannot be told. */
  public static String hostName() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "unknown";
    }
  }
}
