// The official TypeScript SDK client over streamable HTTP, with a bearer token.
// Usage: node http-client.mjs URL TOKEN
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, token] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: 'agentnest-http-it', version: '1.0.0' });
await client.connect(transport);
const out = {};
out.tools = (await client.listTools()).tools.map((t) => t.name);
const call = (name, args) => client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
out.py1 = await call('run_python', { code: 'y = 20' });
out.py2 = await call('run_python', { code: 'y + 1' });
out.sandboxes = await call('list_sandboxes', {});
out.sessionId = transport.sessionId;
await transport.terminateSession();
await client.close();
process.stdout.write(JSON.stringify(out) + '\n');
