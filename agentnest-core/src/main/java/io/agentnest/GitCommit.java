package io.agentnest;

import java.time.Instant;

/**
 * One entry of {@link GitWorkspace#log(int)}. Everything here was read from the sandbox's
 * repository: it is what the sandbox says, bounded, not verified.
 *
 * @param hash the full commit hash
 * @param author the author's name
 * @param email the author's email
 * @param time the author date
 * @param subject the first line of the message
 */
public record GitCommit(String hash, String author, String email, Instant time, String subject) {}
