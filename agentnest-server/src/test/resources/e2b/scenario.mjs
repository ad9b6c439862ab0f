// Drives a real AgentNest server with the official E2B SDKs, unchanged, the way an agent would.
// The server comes from E2B_API_URL / E2B_SANDBOX_URL / E2B_API_KEY; a second tenant's key is in
// AGENTNEST_KEY_B. Prints one JSON object of what it observed; the Java test checks it.
import { Sandbox } from '@e2b/code-interpreter'
import { Sandbox as BaseSandbox, CommandExitError } from 'e2b'

const out = {}
const step = async (name, fn) => {
  try {
    out[name] = await fn()
  } catch (e) {
    out[name] = { thrown: e?.constructor?.name ?? 'Error', message: String(e?.message ?? e) }
  }
}

const sbx = await Sandbox.create({ timeoutMs: 180_000, metadata: { purpose: 'e2b-it' } })
out.sandboxId = sbx.sandboxId

await step('state', async () => {
  await sbx.runCode('x = 1')
  const r = await sbx.runCode('x + 1')
  return { text: r.text, error: r.error ?? null }
})
await step('error', async () => {
  const r = await sbx.runCode('1/0')
  return { name: r.error?.name, value: r.error?.value, hasTraceback: (r.error?.traceback ?? '').includes('ZeroDivisionError') }
})
await step('streamedCode', async () => {
  const seen = []
  const r = await sbx.runCode('import sys\nprint("hello")\nprint("oops", file=sys.stderr)', {
    onStdout: (m) => seen.push(['out', m.line]),
    onStderr: (m) => seen.push(['err', m.line]),
  })
  return { seen, stdout: r.logs.stdout.join(''), stderr: r.logs.stderr.join('') }
})
await step('rich', async () => {
  const r = await sbx.runCode('class H:\n    def _repr_html_(self): return "<b>bold</b>"\nH()')
  return { html: r.results[0]?.html ?? null, main: r.results[0]?.isMainResult ?? null }
})
await step('contexts', async () => {
  const ctx = await sbx.createCodeContext()
  await sbx.runCode('y = 5', { context: ctx })
  const inCtx = await sbx.runCode('y', { context: ctx })
  const inDefault = await sbx.runCode('y')
  const listed = (await sbx.listCodeContexts()).map((c) => c.id)
  await sbx.removeCodeContext(ctx)
  const after = (await sbx.listCodeContexts()).map((c) => c.id)
  return { inCtx: inCtx.text, defaultError: inDefault.error?.name ?? null, listed: listed.includes(ctx.id), removed: !after.includes(ctx.id) }
})
await step('otherLanguage', async () => {
  await sbx.runCode('console.log(1)', { language: 'javascript' })
  return 'no error'
})
await step('command', async () => {
  const chunks = []
  const r = await sbx.commands.run('echo hi; echo err >&2', { onStdout: (d) => chunks.push(d) })
  return { stdout: r.stdout, stderr: r.stderr, exitCode: r.exitCode, chunks }
})
await step('commandFails', async () => {
  try {
    await sbx.commands.run('echo partial; exit 3')
    return 'no error'
  } catch (e) {
    return { isExitError: e instanceof CommandExitError, exitCode: e.exitCode, stdout: e.stdout }
  }
})
await step('background', async () => {
  const h = await sbx.commands.run('sleep 60', { background: true })
  const listed = (await sbx.commands.list()).map((p) => p.pid)
  const killed = await h.kill()
  let waited
  try {
    waited = await h.wait()
  } catch (e) {
    waited = { thrown: e?.constructor?.name, exitCode: e?.exitCode }
  }
  const after = (await sbx.commands.list()).map((p) => p.pid)
  return { pid: h.pid, listed: listed.includes(h.pid), killed, waited, gone: !after.includes(h.pid) }
})
await step('commandTimeout', async () => {
  try {
    await sbx.commands.run('sleep 20', { timeoutMs: 1500 })
    return 'no error'
  } catch (e) {
    return { thrown: e?.constructor?.name }
  }
})
await step('files', async () => {
  await sbx.files.write('/home/user/a.txt', 'data')
  const read = await sbx.files.read('/home/user/a.txt')
  const viaShell = (await sbx.commands.run('cat a.txt')).stdout
  const exists = await sbx.files.exists('/home/user/a.txt')
  const missing = await sbx.files.exists('/home/user/nope.txt')
  const made = await sbx.files.makeDir('/home/user/dir')
  const madeAgain = await sbx.files.makeDir('/home/user/dir')
  await sbx.files.write('/home/user/dir/b.txt', 'bee')
  const listed = (await sbx.files.list('/home/user')).map((e) => `${e.type}:${e.name}`).sort()
  await sbx.files.rename('/home/user/dir/b.txt', '/home/user/dir/c.txt')
  const renamed = await sbx.files.read('/home/user/dir/c.txt')
  const info = await sbx.files.getInfo('/home/user/dir/c.txt')
  await sbx.files.remove('/home/user/dir')
  const removed = !(await sbx.files.exists('/home/user/dir'))
  let outside
  try {
    await sbx.files.read('/etc/passwd')
    outside = 'no error'
  } catch (e) {
    outside = { thrown: e?.constructor?.name, message: String(e?.message) }
  }
  return { read, viaShell, exists, missing, made, madeAgain, listed, renamed, size: info.size, path: info.path, removed, outside }
})
await step('pauseResume', async () => {
  await sbx.runCode('kept = 41')
  await sbx.files.write('/home/user/p.txt', 'persisted')
  const paused = await sbx.pause()
  const pausedAgain = await sbx.pause()
  const listed = await BaseSandbox.list({ query: { state: ['paused'] } }).nextItems()
  const listedState = listed.find((s) => s.sandboxId === sbx.sandboxId)?.state ?? null
  let whilePaused
  try {
    await sbx.runCode('1')
    whilePaused = 'ran'
  } catch (e) {
    whilePaused = { thrown: e?.constructor?.name, message: String(e?.message) }
  }
  const resumed = await Sandbox.connect(sbx.sandboxId)
  const kept = (await resumed.runCode('kept + 1')).text
  const file = await resumed.files.read('/home/user/p.txt')
  const oldHandle = (await sbx.runCode('kept')).text
  return { paused, pausedAgain, listedState, whilePaused, kept, file, oldHandle, sameId: resumed.sandboxId === sbx.sandboxId }
})
await step('fork', async () => {
  await sbx.runCode('forked_value = 7')
  const copies = await sbx.fork({ count: 1 })
  const c = copies[0]
  if (c instanceof Error) {
    return { error: c.message }
  }
  const inCopy = (await c.runCode('forked_value')).text
  await c.runCode('forked_value = 8')
  const inOriginal = (await sbx.runCode('forked_value')).text
  const killed = await c.kill()
  return { inCopy, inOriginal, killed, differentId: c.sandboxId !== sbx.sandboxId }
})
await step('timeout', async () => {
  await sbx.setTimeout(240_000)
  const info = await sbx.getInfo()
  return { endInSeconds: Math.round((info.endAt.getTime() - Date.now()) / 1000), metadata: info.metadata, state: info.state }
})
await step('list', async () => {
  const mine = await BaseSandbox.list({ query: { metadata: { purpose: 'e2b-it' } } }).nextItems()
  const none = await BaseSandbox.list({ query: { metadata: { purpose: 'other' } } }).nextItems()
  return { found: mine.some((s) => s.sandboxId === sbx.sandboxId), filtered: none.length }
})
await step('otherTenant', async () => {
  const listB = await BaseSandbox.list({ apiKey: process.env.AGENTNEST_KEY_B }).nextItems()
  let connectB
  try {
    await Sandbox.connect(sbx.sandboxId, { apiKey: process.env.AGENTNEST_KEY_B })
    connectB = 'connected'
  } catch (e) {
    connectB = { thrown: e?.constructor?.name }
  }
  let killB
  try {
    killB = await BaseSandbox.kill(sbx.sandboxId, { apiKey: process.env.AGENTNEST_KEY_B })
  } catch (e) {
    killB = { thrown: e?.constructor?.name }
  }
  const stillRuns = (await sbx.runCode('x')).text
  return { seesA: listB.some((s) => s.sandboxId === sbx.sandboxId), connectB, killB, stillRuns }
})
await step('wrongKey', async () => {
  try {
    await Sandbox.create({ apiKey: 'ank_0000000000000000_wrongwrongwrongwrongwrongwrongwrongwro' })
    return 'created'
  } catch (e) {
    return { thrown: e?.constructor?.name }
  }
})
await step('unknownTemplate', async () => {
  try {
    await Sandbox.create('no-such-template')
    return 'created'
  } catch (e) {
    return { thrown: e?.constructor?.name, message: String(e?.message) }
  }
})
await step('reconnect', async () => {
  const again = await Sandbox.connect(sbx.sandboxId)
  return (await again.runCode('x * 10')).text
})
await step('kill', async () => {
  const killed = await sbx.kill()
  let after
  try {
    await sbx.runCode('1')
    after = 'ran'
  } catch (e) {
    after = { thrown: e?.constructor?.name }
  }
  const killedAgain = await BaseSandbox.kill(sbx.sandboxId)
  return { killed, after, killedAgain }
})
console.log(JSON.stringify(out))
