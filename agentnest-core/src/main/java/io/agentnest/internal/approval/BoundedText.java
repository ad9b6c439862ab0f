package io.agentnest.internal.approval;

/**
 * A string that a regular expression may read only so many characters of: Java's matcher has no
 * time limit, and a pattern with nested quantifiers can backtrack for hours on one command line.
 */
final class BoundedText implements CharSequence {
  /** Thrown when the budget is spent; the caller decides what that means (it fails closed). */
  static final class Exhausted extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Exhausted() {
      super(null, null, false, false);
    }
  }

  private final String text;
  private final int[] left;
  private final int offset;
  private final int length;

  BoundedText(String text, int steps) {
    this(text, new int[] {steps}, 0, text.length());
  }

  private BoundedText(String text, int[] left, int offset, int length) {
    this.text = text;
    this.left = left;
    this.offset = offset;
    this.length = length;
  }

  @Override
  public int length() {
    return length;
  }

  @Override
  public char charAt(int index) {
    if (--left[0] < 0) {
      throw new Exhausted();
    }
    return text.charAt(offset + index);
  }

  @Override
  public CharSequence subSequence(int start, int end) {
    return new BoundedText(text, left, offset + start, end - start);
  }

  @Override
  public String toString() {
    return text.substring(offset, offset + length);
  }
}
