package io.agentnest.internal;

import com.fasterxml.jackson.databind.JsonNode;
import io.agentnest.AgentNestException;
import io.agentnest.Sandbox;
import io.agentnest.SandboxConfig;
import io.agentnest.internal.channel.AgentChannel;
import io.agentnest.internal.context.SandboxContext;
import io.agentnest.internal.egress.OperationCredentials;
import io.agentnest.internal.files.SandboxArchives;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** The facade's wiring as its parts see it: every method is the facade's own. */
final class DefaultSandboxContext implements SandboxContext {
  private final DefaultSandbox sb;

  DefaultSandboxContext(DefaultSandbox sb) {
    this.sb = sb;
  }

  @Override
  public String id() {
    return sb.id();
  }

  @Override
  public SandboxConfig config() {
    return sb.config();
  }

  @Override
  public Sandbox sandbox() {
    return sb;
  }

  @Override
  public AgentChannel channel() {
    return sb.channel();
  }

  @Override
  public String redact(String reported) {
    return sb.redact(reported);
  }

  @Override
  public AgentNestException agentError(JsonNode header) {
    return sb.agentError(header);
  }

  @Override
  public SandboxArchives archives() {
    return sb.archives();
  }

  @Override
  public List<String> sessionNames() {
    return sb.sessionNames();
  }

  @Override
  public boolean attached() {
    return sb.attached();
  }

  @Override
  public Optional<OperationCredentials> operationCredentials() {
    return sb.operationCredentials();
  }

  @Override
  public void audit(String type, Map<String, ?> data) {
    sb.audit(type, data);
  }

  @Override
  public String toString() {
    return sb.toString();
  }
}
