package io.agentnest.springai;

import static org.assertj.core.api.Assertions.assertThat;

import io.agentnest.Sandbox;
import io.agentnest.docker.DockerEngineRequired;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.Message;
import org.springframework.ai.chat.messages.ToolResponseMessage;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.model.Generation;
import org.springframework.ai.chat.prompt.Prompt;
import org.springframework.ai.model.tool.ToolCallingChatOptions;
import org.springframework.ai.model.tool.ToolCallingManager;
import org.springframework.ai.model.tool.ToolExecutionResult;

/**
 * The tool callbacks driven by Spring AI's own tool-calling machinery ({@link ToolCallingManager},
 * as provider chat models use it), with a scripted model, against a real sandbox.
 */
@ExtendWith(DockerEngineRequired.class)
class AgentNestToolCallbacksIT {
  /**
   * A chat model that plays a script of tool calls through Spring AI's ToolCallingManager, then
   * answers with the last tool result, as a provider's model would after its tool loop.
   */
  static final class ScriptedModel implements ChatModel {
    final List<AssistantMessage.ToolCall> script;
    final List<String> toolResults = new ArrayList<>();
    final List<String> offered = new ArrayList<>();
    final ToolCallingManager manager = ToolCallingManager.builder().build();

    ScriptedModel(AssistantMessage.ToolCall... steps) {
      this.script = List.of(steps);
    }

    @Override
    public ChatResponse call(Prompt prompt) {
      ToolCallingChatOptions options = (ToolCallingChatOptions) prompt.getOptions();
      manager.resolveToolDefinitions(options).forEach(d -> offered.add(d.name()));
      Prompt current = prompt;
      for (AssistantMessage.ToolCall step : script) {
        ChatResponse wantsTool =
            new ChatResponse(
                List.of(
                    new Generation(
                        AssistantMessage.builder().content("").toolCalls(List.of(step)).build())));
        ToolExecutionResult result = manager.executeToolCalls(current, wantsTool);
        List<Message> history = result.conversationHistory();
        ToolResponseMessage response = (ToolResponseMessage) history.get(history.size() - 1);
        toolResults.add(response.getResponses().get(0).responseData());
        current = new Prompt(history, prompt.getOptions());
      }
      String last = toolResults.isEmpty() ? "" : toolResults.get(toolResults.size() - 1);
      return new ChatResponse(
          List.of(new Generation(new AssistantMessage("The sandbox said: " + last))));
    }
  }

  static Sandbox sandbox;

  @BeforeAll
  static void start() {
    sandbox = Sandbox.create();
  }

  @AfterAll
  static void stop() {
    if (sandbox != null) {
      sandbox.close();
    }
  }

  static AssistantMessage.ToolCall call(String id, String name, String json) {
    return new AssistantMessage.ToolCall(id, "function", name, json);
  }

  static Prompt prompt(String text) {
    return new Prompt(
        text,
        ToolCallingChatOptions.builder().toolCallbacks(AgentNestToolCallbacks.of(sandbox)).build());
  }

  @Test
  void scriptedModelUsesTheToolsAndAnswersWithTheSandboxedResult() {
    ScriptedModel model =
        new ScriptedModel(
            call(
                "1",
                "run_python",
                "{\"code\": \"import statistics\\nxs = [3, 1, 4, 1, 5, 9, 2, 6]\"}"),
            call(
                "2", "write_file", "{\"path\": \"data/xs.txt\", \"content\": \"3 1 4 1 5 9 2 6\"}"),
            call(
                "3",
                "run_shell",
                "{\"command\": \"wc -w < data/xs.txt; id -u\", \"workdir\": \"\"}"),
            call("4", "list_files", "{\"path\": \"\", \"recursive\": true}"),
            call("5", "read_file", "{\"path\": \"data/xs.txt\"}"),
            call("6", "run_python", "{\"code\": \"statistics.median(xs)\"}"));
    String answer = model.call(prompt("What is the median?")).getResult().getOutput().getText();
    assertThat(model.offered)
        .containsExactly("run_python", "run_shell", "write_file", "read_file", "list_files");
    assertThat(model.toolResults.get(1)).contains("wrote 15 bytes to data/xs.txt");
    assertThat(model.toolResults.get(2)).contains("[exit code 0]", "8", "65534");
    assertThat(model.toolResults.get(3)).contains("data/xs.txt");
    assertThat(model.toolResults.get(4)).isEqualTo("3 1 4 1 5 9 2 6");
    assertThat(answer).isEqualTo("The sandbox said: [result]\n3.5\n");
  }

  @Test
  void badArgumentsAndFailuresAreTextForTheModel() {
    ScriptedModel model =
        new ScriptedModel(
            call("1", "run_python", "{\"session\": \"x\"}"),
            call("2", "run_python", "not json"),
            call("3", "run_shell", "{\"command\": \"exit 4\"}"),
            call("4", "write_file", "{\"path\": \"/etc/passwd\", \"content\": \"x\"}"));
    model.call(prompt("go"));
    assertThat(model.toolResults.get(0)).contains("'code' is required");
    assertThat(model.toolResults.get(1)).contains("not valid JSON");
    assertThat(model.toolResults.get(2)).contains("[exit code 4]");
    assertThat(model.toolResults.get(3)).contains("BAD_PATH");
  }
}
