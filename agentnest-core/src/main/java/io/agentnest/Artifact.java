package io.agentnest;

import java.nio.file.Path;
import org.jspecify.annotations.Nullable;

/**
 * A file produced in a sandbox, as seen by the host: size and sha256 are computed on the host from
 * the bytes that came out, never taken from the sandbox.
 *
 * <pre>{@code
 * for (Artifact a : sandbox.exportArtifacts("output/**.png", Path.of("results"))) {
 *   System.out.println(a.path() + " " + a.size() + " " + a.sha256() + " -> " + a.hostPath());
 * }
 * }</pre>
 *
 * @param path path relative to the workspace
 * @param size bytes
 * @param sha256 lowercase hex
 * @param hostPath where it was written on the host; null when only listed
 */
public record Artifact(String path, long size, String sha256, @Nullable Path hostPath) {}
