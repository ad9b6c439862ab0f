package io.agentnest.internal.egress;

/** A malformed message; the text is safe to show (it is made printable before use). */
class BadMessage extends Exception {
  private static final long serialVersionUID = 1L;

  BadMessage(String message) {
    super(message);
  }

  @Override
  public String getMessage() {
    String m = super.getMessage();
    return m == null ? "malformed message" : m;
  }
}
