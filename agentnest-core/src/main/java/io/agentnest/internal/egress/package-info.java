/**
 * The host's egress proxy. A sandbox has no network of its own; its connections reach the host as
 * tunnels on the agent channel and {@code EgressProxy} decides each one from the host's policy: the
 * allowlist by name ({@code AddressRules}), the address every name resolves to (never a private,
 * loopback or metadata address unless allowed), the TLS SNI against the CONNECT host ({@code
 * SniCheck}, no domain fronting), and approvals for {@code ask} rules.
 *
 * <p>HTTP parsing is separate from the policy flow: {@code Head}, {@code HeaderField}, {@code
 * HttpSyntax}, {@code LineReader} and {@code BodyFraming} read a hostile client's bytes with bounds
 * on every line, header and body. Name resolution is a {@code Resolver}; tests replace it with
 * {@code EgressResolvers.replaceForTests}, a seam no configuration can reach.
 *
 * <p>Credential injection: for hosts with credential rules only, {@code Interceptor} terminates the
 * sandbox's TLS with a per-sandbox CA ({@code InterceptionCa}, key in host memory only,
 * name-constrained to those hosts), re-encrypts upstream with full verification ({@code
 * UpstreamTrust}; tests replace it with {@code replaceForTests}), adds headers or swaps
 * placeholders ({@code Interception}) and audits each use by secret name ({@code CredentialAudit});
 * every other host stays an opaque tunnel. The host's request rules ({@code RequestRule}) are
 * checked before anything is forwarded. Verified upstream connections are kept per sandbox ({@code
 * UpstreamPool}) and taken or opened by each tunnel's {@code UpstreamLink}.
 */
package io.agentnest.internal.egress;
