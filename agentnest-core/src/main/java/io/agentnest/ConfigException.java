package io.agentnest;

/** A configuration value is invalid; the message names the field and the accepted values. */
public class ConfigException extends AgentNestException {
  private static final long serialVersionUID = 1L;

  public ConfigException(String message) {
    super(message);
  }
}
