package io.agentnest.server;

import io.agentnest.server.http.MemoryBudget;

/**
 * How much of the server one client can hold (docs/server.md, "Slow and abusive clients"): the
 * request threads, the connections one address may keep open, how slowly a body may arrive, how
 * long a connection may sit silent, and how much of a body is gathered before a thread is given to
 * it. The defaults are the server's; tests use smaller ones to hold more than there is.
 *
 * @param maxThreads request threads at most: every blocking call holds one while it runs
 * @param connectionsPerAddress connections one client address may hold open at once; 0 for no bound
 *     (behind a TLS-terminating proxy every client has the proxy's address)
 * @param minBodyBytesPerSecond the slowest a request body may arrive; a slower one fails (400)
 * @param idleTimeoutMillis how long a connection may send nothing before it is closed
 * @param eagerBodyBytes how much of a body is read without a thread before the handler runs: a body
 *     up to this size holds no request thread however slowly it arrives
 * @param memoryBudgetBytes the bytes all requests together may buffer ({@link MemoryBudget})
 */
record ServerLimits(
    int maxThreads,
    int connectionsPerAddress,
    long minBodyBytesPerSecond,
    long idleTimeoutMillis,
    long eagerBodyBytes,
    long memoryBudgetBytes) {

  /**
   * The same limits with no per-address connection bound: behind a TLS-terminating proxy (every
   * client has the proxy's address, and the proxy bounds them) and on the local engine's socket
   * (one user).
   */
  ServerLimits withoutAddressBound() {
    return new ServerLimits(
        maxThreads, 0, minBodyBytesPerSecond, idleTimeoutMillis, eagerBodyBytes, memoryBudgetBytes);
  }

  /** The same limits with a memory budget of {@code bytes}. */
  ServerLimits withMemoryBudget(long bytes) {
    return new ServerLimits(
        maxThreads,
        connectionsPerAddress,
        minBodyBytesPerSecond,
        idleTimeoutMillis,
        eagerBodyBytes,
        bytes);
  }

  ServerLimits {
    if (maxThreads < 8) {
      throw new IllegalArgumentException("maxThreads must be at least 8, got " + maxThreads);
    }
    if (connectionsPerAddress < 0 || minBodyBytesPerSecond < 0 || idleTimeoutMillis <= 0) {
      throw new IllegalArgumentException("limits must not be negative: " + connectionsPerAddress);
    }
  }

  /**
   * The server's: 512 threads (Javalin's 250 is fewer than 200 concurrent clients and their streams
   * need); 256 connections per address (half the threads, so one address cannot take them all); 512
   * bytes/s at least (the attack sent 1 byte every 20 s); 30 s of silence; 1 MiB gathered before
   * dispatch (every JSON body of the default max_json fits, so a slow JSON body never holds a
   * thread).
   */
  static ServerLimits defaults() {
    return new ServerLimits(512, 256, 512, 30_000, 1L << 20, MemoryBudget.defaultBytes());
  }
}
