/**
 * Benchmarks of core components that {@code agentnest bench} runs by name (egress throughput,
 * redaction throughput, audit write and query). They live beside the code they measure and are not
 * API: the CLI finds them through the {@code Benchmark} SPI. Speed targets are checked here, never
 * by timed tests.
 */
package io.agentnest.internal.bench;
