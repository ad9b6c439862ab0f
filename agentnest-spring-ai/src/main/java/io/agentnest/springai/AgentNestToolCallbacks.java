package io.agentnest.springai;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.agentnest.Sandbox;
import io.agentnest.tools.SandboxTools;
import io.agentnest.tools.ToolLimits;
import io.agentnest.tools.ToolOutput;
import java.time.Duration;
import java.util.function.BiFunction;
import org.jspecify.annotations.Nullable;
import org.springframework.ai.tool.ToolCallback;
import org.springframework.ai.tool.definition.ToolDefinition;

/**
 * Spring AI {@link ToolCallback}s that give a model Python, shell and file access inside one
 * AgentNest sandbox; the sandbox's policy applies to every call.
 *
 * <pre>{@code
 * try (Sandbox sandbox = Sandbox.create()) {
 *   String answer = ChatClient.create(chatModel).prompt("Plot y = x^2 and describe it")
 *       .toolCallbacks(AgentNestToolCallbacks.of(sandbox))
 *       .call().content();
 * }
 * }</pre>
 *
 * <p>Failures (a Python exception, a non-zero exit, a refused path, bad arguments) come back as
 * text the model can read, not as exceptions.
 */
public final class AgentNestToolCallbacks {
  private static final ObjectMapper JSON = new ObjectMapper();

  static final String RUN_PYTHON_SCHEMA =
      """
      {"type":"object","properties":{
        "code":{"type":"string","description":"Python source to run, e.g. \\"import math\\\\nmath.sqrt(2)\\"."},
        "session":{"type":"string","description":"Name of an independent interpreter; leave it out for the default session."},
        "timeout_seconds":{"type":"number","exclusiveMinimum":0,"description":"Wall-time limit in seconds; at most the sandbox's limit (the default)."}
      },"required":["code"],"additionalProperties":false}""";

  static final String RUN_SHELL_SCHEMA =
      """
      {"type":"object","properties":{
        "command":{"type":"string","description":"Shell command line, e.g. \\"ls -la && wc -l *.csv\\"."},
        "workdir":{"type":"string","description":"Directory relative to /workspace; leave it out for /workspace."},
        "timeout_seconds":{"type":"number","exclusiveMinimum":0,"description":"Wall-time limit in seconds; at most the sandbox's limit (the default)."}
      },"required":["command"],"additionalProperties":false}""";

  static final String WRITE_FILE_SCHEMA =
      """
      {"type":"object","properties":{
        "path":{"type":"string","description":"Path relative to /workspace, e.g. \\"data/input.csv\\"."},
        "content":{"type":"string","description":"The file's content: text, or base64 when encoding is \\"base64\\"."},
        "encoding":{"type":"string","enum":["utf-8","base64"],"default":"utf-8","description":"How content is encoded."}
      },"required":["path","content"],"additionalProperties":false}""";

  static final String READ_FILE_SCHEMA =
      """
      {"type":"object","properties":{
        "path":{"type":"string","description":"Path relative to /workspace, e.g. \\"results/summary.txt\\"."}
      },"required":["path"],"additionalProperties":false}""";

  static final String LIST_FILES_SCHEMA =
      """
      {"type":"object","properties":{
        "path":{"type":"string","default":"","description":"Directory relative to /workspace; \\"\\" is the root."},
        "recursive":{"type":"boolean","default":false,"description":"List everything below the directory."}
      },"additionalProperties":false}""";

  private AgentNestToolCallbacks() {}

  /** run_python, run_shell, write_file, read_file and list_files on {@code sandbox}. */
  public static ToolCallback[] of(Sandbox sandbox) {
    return of(sandbox, ToolLimits.DEFAULTS);
  }

  public static ToolCallback[] of(Sandbox sandbox, ToolLimits limits) {
    SandboxTools tools = SandboxTools.of(sandbox, limits);
    return new ToolCallback[] {
      callback(
          "run_python",
          SandboxTools.RUN_PYTHON_DESCRIPTION,
          RUN_PYTHON_SCHEMA,
          tools,
          (t, a) -> t.runPython(required(a, "code"), optional(a, "session"), timeout(a))),
      callback(
          "run_shell",
          SandboxTools.RUN_SHELL_DESCRIPTION,
          RUN_SHELL_SCHEMA,
          tools,
          (t, a) -> t.runShell(required(a, "command"), optional(a, "workdir"), timeout(a))),
      callback(
          "write_file",
          SandboxTools.WRITE_FILE_DESCRIPTION,
          WRITE_FILE_SCHEMA,
          tools,
          (t, a) ->
              t.writeFile(
                  required(a, "path"),
                  required(a, "content"),
                  "base64".equalsIgnoreCase(String.valueOf(optional(a, "encoding"))))),
      callback(
          "read_file",
          SandboxTools.READ_FILE_DESCRIPTION,
          READ_FILE_SCHEMA,
          tools,
          (t, a) -> t.readFile(required(a, "path"))),
      callback(
          "list_files",
          SandboxTools.LIST_FILES_DESCRIPTION,
          LIST_FILES_SCHEMA,
          tools,
          (t, a) -> t.listFiles(optional(a, "path"), a.path("recursive").asBoolean(false))),
    };
  }

  private static ToolCallback callback(
      String name,
      String description,
      String schema,
      SandboxTools tools,
      BiFunction<SandboxTools, JsonNode, ToolOutput> work) {
    ToolDefinition definition =
        ToolDefinition.builder().name(name).description(description).inputSchema(schema).build();
    return new ToolCallback() {
      @Override
      public ToolDefinition getToolDefinition() {
        return definition;
      }

      @Override
      public String call(String toolInput) {
        JsonNode args;
        try {
          args = JSON.readTree(toolInput == null || toolInput.isBlank() ? "{}" : toolInput);
        } catch (JsonProcessingException e) {
          return "error: the arguments are not valid JSON ("
              + SandboxTools.bound(e.getOriginalMessage(), 200)
              + "); send an object like "
              + schema.replaceAll("\\s+", " ");
        }
        if (!args.isObject()) {
          return "error: the arguments must be a JSON object";
        }
        try {
          return work.apply(tools, args).text();
        } catch (IllegalArgumentException e) {
          return "error: " + e.getMessage();
        }
      }
    };
  }

  private static String required(JsonNode args, String name) {
    JsonNode v = args.get(name);
    if (v == null || v.isNull()) {
      throw new IllegalArgumentException("'" + name + "' is required");
    }
    if (!v.isTextual()) {
      throw new IllegalArgumentException("'" + name + "' must be a string");
    }
    return v.asText();
  }

  private static @Nullable String optional(JsonNode args, String name) {
    JsonNode v = args.get(name);
    if (v == null || v.isNull()) {
      return null;
    }
    if (!v.isTextual()) {
      throw new IllegalArgumentException("'" + name + "' must be a string");
    }
    return v.asText();
  }

  private static @Nullable Duration timeout(JsonNode args) {
    JsonNode v = args.get("timeout_seconds");
    if (v == null || v.isNull()) {
      return null;
    }
    if (!v.isNumber() || !(v.asDouble() > 0) || v.asDouble() > 86_400) {
      throw new IllegalArgumentException("'timeout_seconds' must be a number between 0 and 86400");
    }
    return Duration.ofMillis((long) Math.ceil(v.asDouble() * 1000));
  }
}
