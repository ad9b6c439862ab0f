package io.agentnest.internal.context;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.AgentNestException;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.egress.OperationCredentials;
import io.agentnest.internal.files.SandboxArchives;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The live wiring of one sandbox that its parts (state transfer, snapshots, git, forks) work
 * through. The facade hands it out so that the parts depend on this small surface, not on the
 * facade, and the facade keeps only {@link Sandbox}'s methods public.
 */
public interface SandboxContext {
  String id();

  SandboxConfig config();

  /** The public face of the same sandbox, for the operations a user could call too. */
  Sandbox sandbox();

  AgentChannel channel();

  /** Text the sandbox reported (a name, a reason), with secrets masked before anyone reads it. */
  String redact(String reported);

  /** An error reply of the agent, with secrets masked: error text leaves the sandbox too. */
  AgentNestException agentError(JsonNode header);

  /** tar streams in and out of this sandbox (fork, snapshots, artifacts, uploads). */
  SandboxArchives archives();

  /** The Python sessions this sandbox may have started (checked names, capped in number). */
  List<String> sessionNames();

  /**
   * Whether this handle attached to a sandbox it did not make: it cannot know the sandbox's secret
   * variables, so it never saves the sandbox's memory.
   */
  boolean attached();

  /**
   * The credentials host operations (git) have this sandbox's egress proxy add while they run;
   * empty when the sandbox has no network.
   */
  Optional<OperationCredentials> operationCredentials();

  /** Records an audit event of this sandbox. */
  void audit(String type, Map<String, ?> data);
}
