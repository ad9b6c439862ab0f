/**
 * {@code server.yaml} as the operator writes it, checked when it is read (the policy, approval
 * rules, audit shipping), so that a bad file stops the server at start with the line that is wrong
 * rather than a request later. The CLI reads it through {@link
 * io.agentnest.server.config.ServerConfig}.
 */
package io.agentnest.server.config;
