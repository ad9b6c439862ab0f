package io.agentnest.langchain4j;

import dev.langchain4j.agent.tool.P;
import dev.langchain4j.agent.tool.Tool;
import io.agentnest.Sandbox;
import io.agentnest.tools.SandboxTools;
import io.agentnest.tools.ToolLimits;
import io.agentnest.tools.ToolOutput;
import org.jspecify.annotations.Nullable;

/**
 * LangChain4j tools that give a model Python, shell and file access inside one AgentNest sandbox.
 * The sandbox's policy (limits, network, approvals, redaction, audit) applies to every call.
 *
 * <pre>{@code
 * try (Sandbox sandbox = Sandbox.create()) {
 *   Assistant assistant = AiServices.builder(Assistant.class)
 *       .chatModel(model)
 *       .tools(new AgentNestTools(sandbox))
 *       .build();
 *   assistant.chat("What is the 20th Fibonacci number? Compute it.");
 * }
 * }</pre>
 *
 * <p>Failures (a Python exception, a non-zero exit, a refused path) come back as text starting with
 * the error, so the model can read it and try again. Images a call produces are mentioned in the
 * text; write them to a file to keep them.
 */
public class AgentNestTools {
  private final SandboxTools tools;

  public AgentNestTools(Sandbox sandbox) {
    this(sandbox, ToolLimits.DEFAULTS);
  }

  public AgentNestTools(Sandbox sandbox, ToolLimits limits) {
    this.tools = SandboxTools.of(sandbox, limits);
  }

  @Tool(name = "run_python", value = SandboxTools.RUN_PYTHON_DESCRIPTION)
  public String runPython(
      @P(name = "code", value = "Python source to run, e.g. \"import math\\nmath.sqrt(2)\"")
          String code) {
    return text(tools.runPython(code, null, null));
  }

  @Tool(name = "run_shell", value = SandboxTools.RUN_SHELL_DESCRIPTION)
  public String runShell(
      @P(name = "command", value = "Shell command line, e.g. \"ls -la && wc -l *.csv\"")
          String command) {
    return text(tools.runShell(command, null, null));
  }

  @Tool(name = "write_file", value = SandboxTools.WRITE_FILE_DESCRIPTION)
  public String writeFile(
      @P(name = "path", value = "Path relative to /workspace, e.g. \"data/input.csv\"") String path,
      @P(name = "content", value = "The file's text content (UTF-8)") String content) {
    return text(tools.writeFile(path, content, false));
  }

  @Tool(name = "read_file", value = SandboxTools.READ_FILE_DESCRIPTION)
  public String readFile(
      @P(name = "path", value = "Path relative to /workspace, e.g. \"results/summary.txt\"")
          String path) {
    return text(tools.readFile(path));
  }

  @Tool(name = "list_files", value = SandboxTools.LIST_FILES_DESCRIPTION)
  public String listFiles(
      @P(
              name = "path",
              value = "Directory relative to /workspace; empty for the root",
              required = false)
          @Nullable String path) {
    return text(tools.listFiles(path, false));
  }

  static String text(ToolOutput out) {
    return out.text();
  }
}
