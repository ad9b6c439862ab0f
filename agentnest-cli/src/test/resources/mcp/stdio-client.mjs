// A real MCP client (the official TypeScript SDK) driving `agentnest mcp` over stdio.
// Usage: node stdio-client.mjs JAVA JAR [agentnest mcp options...]
// Prints one JSON object with every answer; the Java test asserts on it.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import http from 'node:http';

const [java, jar, ...mcpArgs] = process.argv.slice(2);
const hostServer = http.createServer((req, res) => res.end('hello from the host ' + req.url));
await new Promise((resolve) => hostServer.listen(0, '127.0.0.1', resolve));
const port = hostServer.address().port;
const otherServer = http.createServer((req, res) => res.end('the other host ' + req.url));
await new Promise((resolve) => otherServer.listen(0, '127.0.0.1', resolve));
const otherPort = otherServer.address().port;

const elicitations = [];
const client = new Client(
  { name: 'agentnest-it', version: '1.0.0' },
  { capabilities: { elicitation: {} } },
);
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  elicitations.push({ message: request.params.message, schema: request.params.requestedSchema });
  // The first question is approved, every later one declined.
  return elicitations.length === 1
    ? { action: 'accept', content: { approve: true } }
    : { action: 'decline' };
});

const transport = new StdioClientTransport({
  command: java,
  args: ['-jar', jar, 'mcp', ...mcpArgs],
  env: process.env,
  stderr: 'inherit',
});
const started = Date.now();
await client.connect(transport);
const out = { serverVersion: client.getServerVersion() };
const call = (name, args, extra = {}) =>
  client.callTool({ name, arguments: args }, undefined, { timeout: 120000, ...extra });

const tools = await client.listTools();
out.tools = tools.tools;
out.py1 = await call('run_python', { code: 'x = 41\nprint("x is set")' });
out.py2 = await call('run_python', { code: 'x + 1' });
out.shell = await call('run_shell', { command: 'echo hello; id -u; exit 3' });
out.write = await call('write_file', { path: 'notes/a.txt', content: 'héllo\nworld\n' });
out.read = await call('read_file', { path: 'notes/a.txt' });
out.list = await call('list_files', { path: '', recursive: true });
// A value whose rich representation is a PNG (what a matplotlib figure gives), built without
// third-party packages: a 1x1 red pixel.
const png = [
  'import struct, zlib',
  'def chunk(t, d): return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))',
  'raw = b"\\x00\\xff\\x00\\x00"',
  'PNG = b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")',
  'open("dot.png", "wb").write(PNG)',
  'class Dot:',
  '    def _repr_png_(self): return PNG',
  'Dot()',
].join('\n');
out.image = await call('run_python', { code: png });
out.exportImage = await call('export_artifact', { path: 'dot.png' });
out.exportText = await call('export_artifact', { path: 'notes/a.txt' });
await call('run_shell', { command: 'head -c 3000 /dev/urandom > blob.bin' });
out.exportBlob = await call('export_artifact', { path: 'blob.bin' });
out.pyError = await call('run_python', { code: 'def f():\n    return 1/0\nf()' });
out.badPath = await call('read_file', { path: '../../etc/passwd' });
out.missingArg = await call('run_shell', {});
out.secret = await call('run_python', { code: 'import os\nprint(os.environ["IT_SECRET"])' });
out.timeout = await call('run_python', { code: 'import time\ntime.sleep(30)', timeout_seconds: 600 });
out.afterTimeout = await call('run_python', { code: 'x' });

const progress = [];
out.progressRun = await call(
  'run_shell',
  { command: 'for i in 1 2 3 4 5; do echo step $i; sleep 0.5; done' },
  { onprogress: (p) => progress.push(p) },
);
out.progress = progress;

out.created = await call('create_sandbox', {});
const createdId = /created sandbox (\S+)/.exec(out.created.content[0].text)?.[1];
out.createdId = createdId;
out.isolated = await call('run_python', { code: 'x', sandbox_id: createdId });
out.listSandboxes = await call('list_sandboxes', {});
out.destroyed = await call('destroy_sandbox', { sandbox_id: createdId });
out.unknownSandbox = await call('run_shell', { command: 'true', sandbox_id: createdId });
out.listAfter = await call('list_sandboxes', {});

// Fork: the copy has the default sandbox's variables; later changes stay apart.
await call('run_python', { code: 'forked_value = 41' });
out.forked = await call('fork_sandbox', {});
const forkId = /forked into sandbox (\S+)/.exec(out.forked.content[0].text)?.[1];
out.forkId = forkId;
out.forkSees = await call('run_python', { code: 'forked_value = forked_value + 1; forked_value', sandbox_id: forkId });
out.parentKeeps = await call('run_python', { code: 'forked_value' });
out.forkDestroyed = await call('destroy_sandbox', { sandbox_id: forkId });

// Through the sandbox's egress proxy (127.0.0.1:3128 inside), to a host that is not on the
// allowlist: the proxy asks the approval handler, which asks this client by elicitation.
const fetch = (p, path) =>
  [
    'import http.client',
    'c = http.client.HTTPConnection("127.0.0.1", 3128, timeout=60)',
    `c.request("GET", "http://localhost:${p}${path}")`,
    'resp = c.getresponse()',
    'body = resp.read().decode()',
    'body if resp.status == 200 else resp.status',
  ].join('\n');
out.approved = await call('run_python', { code: fetch(port, '/approved') });
out.declined = await call('run_python', { code: fetch(otherPort, '/declined') });
// The answer for a host holds for the session: no second question.
out.approvedAgain = await call('run_python', { code: fetch(port, '/again') });
out.elicitations = elicitations;

await client.close();
hostServer.close();
otherServer.close();
out.seconds = (Date.now() - started) / 1000;
process.stdout.write(JSON.stringify(out) + '\n');
