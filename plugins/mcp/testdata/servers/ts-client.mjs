// An MCP client made with the TypeScript SDK, for the host's tests of MCP
// over HTTP with a credential:
//
//   node ts-client.mjs URL TOKEN TOOL ARGUMENTS_JSON
//
// connects with Authorization: Bearer TOKEN, lists the tools, calls TOOL,
// and prints {"tools": [...], "result": {...}} on stdout. A refused
// connection exits 1 with the error on stderr.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token, tool, args] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "ts-agent", version: "1.0.0" });
try {
  await client.connect(transport);
  const tools = await client.listTools();
  const result = await client.callTool({ name: tool, arguments: JSON.parse(args) });
  process.stdout.write(JSON.stringify({ tools: tools.tools.map((t) => t.name), result }) + "\n");
  await client.close();
} catch (err) {
  process.stderr.write(String(err) + "\n");
  process.exit(1);
}
