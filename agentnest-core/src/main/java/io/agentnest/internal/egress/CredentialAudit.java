package io.agentnest.internal.egress;

import java.util.Map;

/**
 * Where the proxy reports each use of a credential and each placeholder that went to the wrong
 * host. Secrets are named, never shown; paths are the sandbox's choice (the sink masks and bounds
 * them).
 */
public interface CredentialAudit {
  /** How a credential was applied. */
  enum Kind {
    INJECTED,
    PLACEHOLDER
  }

  /** A request to {@code host} carried the secret {@code secretName}; {@code status} 0: none. */
  void used(String secretName, Kind kind, String host, String method, String path, int status);

  /**
   * Further requests on one connection to {@code host} carried {@code secretName} after the one
   * reported to {@link #used}: {@code repeated} of them, counted by response status ({@code
   * statuses}; 0: none), the last being {@code lastMethod lastPath}. Reported when the connection
   * ends.
   */
  void usedAgain(
      String secretName,
      Kind kind,
      String host,
      long repeated,
      Map<Integer, Long> statuses,
      String lastMethod,
      String lastPath);

  /**
   * A request to {@code host} carried the placeholder of {@code secretName}, which belongs to
   * {@code ownerHost}: it was not swapped.
   */
  void leakAttempt(String secretName, String ownerHost, String host, String method, String path);

  /**
   * A request to {@code host} was refused by the host's request rules ({@code rule}: {@code
   * request-rules}, or {@code ambiguous-path} for a path the proxy will not compare) and was not
   * forwarded; {@code reason} says why.
   */
  void requestDenied(String host, String method, String path, String rule, String reason);

  CredentialAudit NONE =
      new CredentialAudit() {
        @Override
        public void used(
            String secretName, Kind kind, String host, String method, String path, int status) {}

        @Override
        public void usedAgain(
            String secretName,
            Kind kind,
            String host,
            long repeated,
            Map<Integer, Long> statuses,
            String lastMethod,
            String lastPath) {}

        @Override
        public void leakAttempt(
            String secretName, String ownerHost, String host, String method, String path) {}

        @Override
        public void requestDenied(
            String host, String method, String path, String rule, String reason) {}
      };
}
