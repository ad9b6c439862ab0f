// LangChain.js loads AgentNest's MCP tools through @langchain/mcp-adapters and a LangGraph ReAct
// agent calls run_python with them. The model is scripted (no LLM on a build machine): it asks for
// two tool calls, then answers; what the tools returned is what the agent saw, printed as JSON.
// Usage: node langchain-agent.mjs JAVA JAR [agentnest mcp options...]
import { MultiServerMCPClient } from '@langchain/mcp-adapters'
import { createReactAgent } from '@langchain/langgraph/prebuilt'
import { BaseChatModel } from '@langchain/core/language_models/chat_models'
import { AIMessage } from '@langchain/core/messages'

const [java, jar, ...mcpArgs] = process.argv.slice(2)

class ScriptedModel extends BaseChatModel {
  constructor(steps) {
    super({})
    this.steps = steps
    this.observations = []
  }

  _llmType() {
    return 'scripted'
  }

  bindTools() {
    return this
  }

  async _generate(messages) {
    const last = messages[messages.length - 1]
    if (last?._getType?.() === 'tool' || last?.getType?.() === 'tool') {
      this.observations.push(typeof last.content === 'string' ? last.content : JSON.stringify(last.content))
    }
    const message = this.steps.shift() ?? new AIMessage('no more steps')
    return { generations: [{ message, text: typeof message.content === 'string' ? message.content : '' }] }
  }
}

const client = new MultiServerMCPClient({
  mcpServers: {
    // env: the MCP SDK passes a child only a few variables by default; AGENTNEST_HOME must reach it.
    agentnest: { transport: 'stdio', command: java, args: ['-jar', jar, 'mcp', ...mcpArgs], env: process.env, stderr: 'inherit' },
  },
})
try {
  const tools = await client.getTools()
  const runPython = tools.find((t) => t.name.endsWith('run_python'))
  const model = new ScriptedModel([
    new AIMessage({ content: '', tool_calls: [{ id: 'call-1', name: runPython.name, args: { code: 'x = 6 * 7\nprint(x)' } }] }),
    new AIMessage({ content: '', tool_calls: [{ id: 'call-2', name: runPython.name, args: { code: 'print(x + 1)' } }] }),
    new AIMessage('x + 1 is 43'),
  ])
  const agent = createReactAgent({ llm: model, tools })
  const result = await agent.invoke({ messages: [{ role: 'user', content: 'compute 6 * 7, then add one' }] })
  console.log(
    JSON.stringify({
      tools: tools.map((t) => t.name),
      observations: model.observations,
      final: result.messages[result.messages.length - 1].content,
    }),
  )
} finally {
  await client.close()
}
