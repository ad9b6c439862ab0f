/**
 * The Docker backend's engine side; every docker-java type stays in this package. {@code
 * DockerEngine} is a facade of delegations: container specs (least privilege, seccomp, limits, log
 * driver none), containers and their attach streams, images, runtimes (runc, runsc), bulk
 * directories for fork and transfer, gVisor checkpoints ({@code DockerCheckpoints}) and the
 * engine's errors turned into {@code AgentNestException}s that say what to do. {@code DockerDoctor}
 * checks a host for {@code agentnest doctor}.
 */
package io.agentnest.docker.internal;
