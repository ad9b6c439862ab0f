package io.agentnest.langchain4j;

import dev.langchain4j.code.CodeExecutionEngine;
import io.agentnest.Sandbox;
import io.agentnest.tools.SandboxTools;
import io.agentnest.tools.ToolLimits;

/**
 * LangChain4j's {@link CodeExecutionEngine} backed by an AgentNest sandbox: code runs in the
 * sandbox's persistent Python session, so state carries over between calls.
 *
 * <pre>{@code
 * CodeExecutionEngine engine = new AgentNestCodeExecutionEngine(sandbox);
 * engine.execute("print(sum(range(10)))");   // "[stdout]\n45\n"
 * }</pre>
 */
public class AgentNestCodeExecutionEngine implements CodeExecutionEngine {
  private final SandboxTools tools;

  public AgentNestCodeExecutionEngine(Sandbox sandbox) {
    this(sandbox, ToolLimits.DEFAULTS);
  }

  public AgentNestCodeExecutionEngine(Sandbox sandbox, ToolLimits limits) {
    this.tools = SandboxTools.of(sandbox, limits);
  }

  /**
   * Runs Python code; returns stdout, the last expression's value and, on failure, the error and
   * traceback, as text (bounded).
   */
  @Override
  public String execute(String code) {
    return tools.runPython(code, null, null).text();
  }
}
