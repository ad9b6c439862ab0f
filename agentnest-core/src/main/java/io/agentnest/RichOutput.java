package io.agentnest;

/**
 * A rich representation of a Python value, such as a PNG image of a plot.
 *
 * @param mimeType e.g. {@code image/png}, {@code text/html}
 * @param data the raw bytes (decoded, not base64)
 */
public record RichOutput(String mimeType, byte[] data) {
  public RichOutput {
    data = data.clone();
  }

  @Override
  public byte[] data() {
    return data.clone();
  }

  @Override
  public String toString() {
    return "RichOutput[" + mimeType + ", " + data.length + " bytes]";
  }
}
