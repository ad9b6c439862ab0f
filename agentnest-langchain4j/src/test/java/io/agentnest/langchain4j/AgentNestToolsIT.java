package io.agentnest.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.service.AiServices;
import io.agentnest.Sandbox;
import io.agentnest.docker.DockerEngineRequired;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** A LangChain4j {@code AiServices} agent with a scripted model using the tools in a sandbox. */
@ExtendWith(DockerEngineRequired.class)
class AgentNestToolsIT {
  interface Assistant {
    String chat(String message);
  }

  /**
   * A chat model that plays a script: each step asks for one tool call; when the script is done it
   * answers with the last tool result. It records what it was offered and what it got back.
   */
  static final class ScriptedModel implements ChatModel {
    final List<ToolExecutionRequest> script;
    final List<String> toolResults = new CopyOnWriteArrayList<>();
    final List<String> offeredTools = new CopyOnWriteArrayList<>();

    ScriptedModel(ToolExecutionRequest... steps) {
      this.script = List.of(steps);
    }

    @Override
    public ChatResponse doChat(ChatRequest request) {
      if (offeredTools.isEmpty() && request.toolSpecifications() != null) {
        request.toolSpecifications().forEach(t -> offeredTools.add(t.name()));
      }
      List<ChatMessage> msgs = request.messages();
      int done = 0;
      String last = "";
      for (ChatMessage m : msgs) {
        if (m instanceof ToolExecutionResultMessage r) {
          done++;
          last = r.text();
        }
      }
      if (done > toolResults.size()) {
        toolResults.add(last);
      }
      AiMessage answer =
          done < script.size()
              ? AiMessage.from(script.get(done))
              : AiMessage.from("The sandbox said: " + last);
      return ChatResponse.builder().aiMessage(answer).build();
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

  static ToolExecutionRequest call(String id, String tool, String json) {
    return ToolExecutionRequest.builder().id(id).name(tool).arguments(json).build();
  }

  @Test
  void agentCallsToolsAndAnswersWithTheSandboxedResult() {
    ScriptedModel model =
        new ScriptedModel(
            call(
                "1",
                "run_python",
                "{\"code\": \"fib = [0, 1]\\nfor _ in range(30): fib.append(fib[-1] + fib[-2])\"}"),
            call("2", "write_file", "{\"path\": \"out/fib.txt\", \"content\": \"832040\"}"),
            call("3", "run_shell", "{\"command\": \"cat out/fib.txt; echo; id -u\"}"),
            call("4", "list_files", "{\"path\": \"out\"}"),
            call("5", "read_file", "{\"path\": \"out/fib.txt\"}"),
            call("6", "run_python", "{\"code\": \"fib[30]\"}"));
    Assistant assistant =
        AiServices.builder(Assistant.class)
            .chatModel(model)
            .tools(new AgentNestTools(sandbox))
            .build();

    String answer = assistant.chat("What is the 30th Fibonacci number? Compute it in the sandbox.");

    assertThat(model.offeredTools)
        .contains("run_python", "run_shell", "write_file", "read_file", "list_files");
    assertThat(model.toolResults).hasSize(6);
    assertThat(model.toolResults.get(1)).contains("wrote 6 bytes to out/fib.txt");
    assertThat(model.toolResults.get(2)).contains("[exit code 0]", "832040", "65534");
    assertThat(model.toolResults.get(3)).contains("out/fib.txt");
    assertThat(model.toolResults.get(4)).isEqualTo("832040");
    // The session kept 'fib' between the first and the last call: state lives in the sandbox.
    assertThat(answer).isEqualTo("The sandbox said: [result]\n832040\n");
    assertThat(sandbox.files().readString("out/fib.txt")).isEqualTo("832040");
  }

  @Test
  void errorsReachTheModelAsText() {
    ScriptedModel model =
        new ScriptedModel(
            call("1", "run_python", "{\"code\": \"int('x')\"}"),
            call("2", "read_file", "{\"path\": \"../../etc/shadow\"}"));
    Assistant assistant =
        AiServices.builder(Assistant.class)
            .chatModel(model)
            .tools(new AgentNestTools(sandbox))
            .build();
    assistant.chat("go");
    assertThat(model.toolResults.get(0)).contains("[error] ValueError", "invalid literal");
    assertThat(model.toolResults.get(1)).contains("BAD_PATH");
  }

  @Test
  void codeExecutionEngineRunsInTheSandboxSession() {
    AgentNestCodeExecutionEngine engine = new AgentNestCodeExecutionEngine(sandbox);
    List<String> outs = new ArrayList<>();
    outs.add(engine.execute("total = sum(range(10))\nprint('total', total)"));
    outs.add(engine.execute("total * 2"));
    outs.add(engine.execute("import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=3)"));
    assertThat(outs.get(0)).isEqualTo("[stdout]\ntotal 45\n");
    assertThat(outs.get(1)).isEqualTo("[result]\n90\n");
    assertThat(outs.get(2)).contains("[error] ", "[traceback]");
  }
}
