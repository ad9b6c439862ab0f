package io.agentnest;

/**
 * A Python error raised by session code: exception class name, message and formatted traceback.
 *
 * @param name exception class, e.g. {@code ZeroDivisionError}
 * @param value the exception's message
 * @param traceback the formatted traceback as Python prints it
 */
public record ExecError(String name, String value, String traceback) {}
