package io.agentnest.tools;

/**
 * Caps on what a tool puts into a model's context. Everything that comes out of a sandbox is
 * untrusted and may be huge; these bounds apply after the sandbox's own limits (output cap, file
 * size).
 *
 * @param maxTextChars characters of text per tool answer (stdout, stderr and traceback share it)
 * @param maxReadBytes bytes {@code read_file} returns as text
 * @param maxArtifactBytes bytes of one exported artifact or image
 * @param maxListEntries entries {@code list_files} returns
 */
public record ToolLimits(
    int maxTextChars, int maxReadBytes, int maxArtifactBytes, int maxListEntries) {
  /** 40,000 characters of text, 256 KiB per read, 5 MiB per artifact, 1,000 entries. */
  public static final ToolLimits DEFAULTS = new ToolLimits(40_000, 256 * 1024, 5 << 20, 1000);

  public ToolLimits {
    if (maxTextChars < 1000) {
      throw new IllegalArgumentException("maxTextChars must be at least 1000, was " + maxTextChars);
    }
    if (maxReadBytes < 1 || maxArtifactBytes < 1 || maxListEntries < 1) {
      throw new IllegalArgumentException("tool limits must be positive");
    }
  }

  /** The same limits with another artifact cap. */
  public ToolLimits withMaxArtifactBytes(int bytes) {
    return new ToolLimits(maxTextChars, maxReadBytes, bytes, maxListEntries);
  }
}
