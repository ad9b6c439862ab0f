package io.agentnest.spi;

/**
 * One result of {@code agentnest doctor}.
 *
 * @param name what was checked
 * @param status outcome
 * @param detail what was found
 * @param fix what to do when it is not OK (empty when OK)
 */
public record HealthCheck(String name, Status status, String detail, String fix) {
  /** Outcome of a check; only FAIL makes doctor exit non-zero. */
  public enum Status {
    OK,
    WARN,
    FAIL
  }

  public static HealthCheck ok(String name, String detail) {
    return new HealthCheck(name, Status.OK, detail, "");
  }

  public static HealthCheck warn(String name, String detail, String fix) {
    return new HealthCheck(name, Status.WARN, detail, fix);
  }

  public static HealthCheck fail(String name, String detail, String fix) {
    return new HealthCheck(name, Status.FAIL, detail, fix);
  }
}
