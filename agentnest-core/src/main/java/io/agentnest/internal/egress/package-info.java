/**
 * The host's egress proxy. A sandbox has no network of its own; its connections reach the host as
 * tunnels on the agent channel and {@code EgressProxy} decides each one from the host's policy: the
 * allowlist by name ({@code AddressRules}), the address every name resolves to (never a private,
 * loopback or metadata address unless allowed), the TLS SNI against the CONNECT host ({@code
 * SniCheck}, no domain fronting), and approvals for {@code ask} rules.
 *
 * <p>HTTP parsing is separate from the policy flow: {@code Head}, {@code Header}, {@code
 * HttpSyntax}, {@code LineReader} and {@code BodyFraming} read a hostile client's bytes with bounds
 * on every line, header and body. Name resolution is a {@code Resolver}; tests replace it with
 * {@code EgressResolvers.replaceForTests}, a seam no configuration can reach.
 */
package io.agentnest.internal.egress;
