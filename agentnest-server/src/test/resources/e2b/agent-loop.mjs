// An agent loop built on the E2B SDK the way framework adapters build one (an execute_python tool
// backed by Sandbox.runCode, plus file and shell tools), with a scripted model in place of an LLM:
// it reads each observation and picks the next action, including recovering from its own error.
// Prints the observations and the final answer as JSON.
import { Sandbox } from '@e2b/code-interpreter'

const sbx = await Sandbox.create()
const tools = {
  async execute_python({ code }) {
    const ex = await sbx.runCode(code)
    if (ex.error) {
      return `error: ${ex.error.name}: ${ex.error.value}`
    }
    return (ex.logs.stdout.join('') + (ex.text ?? '')).trim()
  },
  async write_file({ path, content }) {
    await sbx.files.write(path, content)
    return 'written'
  },
  async shell({ cmd }) {
    return (await sbx.commands.run(cmd)).stdout.trim()
  },
}

function model(observations) {
  const last = observations[observations.length - 1]
  if (last === undefined) return { tool: 'execute_python', args: { code: 'print(total)' } }
  if (last.startsWith('error: NameError')) {
    return { tool: 'execute_python', args: { code: 'total = sum(range(101))\nprint(total)' } }
  }
  if (last === '5050') return { tool: 'write_file', args: { path: '/home/user/answer.txt', content: last } }
  if (last === 'written') return { tool: 'shell', args: { cmd: 'wc -c < answer.txt' } }
  return { final: `total is ${observations.find((o) => o === '5050')}, the file has ${last} bytes` }
}

const observations = []
let final
try {
  for (let turn = 0; turn < 8 && final === undefined; turn++) {
    const action = model(observations)
    if (action.final !== undefined) {
      final = action.final
    } else {
      observations.push(await tools[action.tool](action.args))
    }
  }
} finally {
  await sbx.kill()
}
console.log(JSON.stringify({ observations, final }))
