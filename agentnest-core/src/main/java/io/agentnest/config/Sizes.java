package io.agentnest.config;

/**
 * Human sizes under their old name.
 *
 * @deprecated moved to {@link io.agentnest.Sizes} (the API parses sizes itself and may not import
 *     the configuration); this name goes in the next release.
 */
@Deprecated(forRemoval = true)
public final class Sizes {
  private Sizes() {}

  /** See {@link io.agentnest.Sizes#parse}. */
  public static long parse(String field, String text) {
    return io.agentnest.Sizes.parse(field, text);
  }

  /** See {@link io.agentnest.Sizes#format}. */
  public static String format(long bytes) {
    return io.agentnest.Sizes.format(bytes);
  }
}
