package io.agentnest.tools;

import java.util.List;

/**
 * What a sandbox tool hands back to a model: text (already bounded and redacted), attachments such
 * as images, and whether the call failed. A failure is still an answer the model can read and act
 * on: {@link #text()} says what went wrong and what to do instead.
 *
 * @param text model-readable text, at most {@link ToolLimits#maxTextChars()} characters
 * @param attachments images, files or blobs produced by the call (each size-capped)
 * @param isError whether the call failed (bad input, a non-zero exit, a Python exception, a limit)
 */
public record ToolOutput(String text, List<Attachment> attachments, boolean isError) {
  public ToolOutput {
    attachments = List.copyOf(attachments);
  }

  static ToolOutput ok(String text) {
    return new ToolOutput(text, List.of(), false);
  }

  static ToolOutput error(String text) {
    return new ToolOutput(text, List.of(), true);
  }

  /**
   * A binary or text payload that travels next to the text.
   *
   * @param name file name or a label such as {@code result.png}
   * @param mimeType e.g. {@code image/png}
   * @param kind how a client should present it
   * @param data the bytes
   */
  public record Attachment(String name, String mimeType, Kind kind, byte[] data) {
    public Attachment {
      data = data.clone();
    }

    @Override
    public byte[] data() {
      return data.clone();
    }

    /** Number of bytes. */
    public int size() {
      return data.length;
    }

    @Override
    public String toString() {
      return "Attachment[" + name + ", " + mimeType + ", " + kind + ", " + data.length + " bytes]";
    }
  }

  /** How an attachment is meant to be shown. */
  public enum Kind {
    /** An image a multimodal model can look at. */
    IMAGE,
    /** UTF-8 text. */
    TEXT,
    /** Opaque bytes (an archive, a PDF, a model file, ...). */
    BLOB
  }
}
