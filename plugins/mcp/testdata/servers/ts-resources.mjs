// An MCP client made with the TypeScript SDK, for the bridge's test of
// resources and prompts through the host:
//
//   node ts-resources.mjs HOST CONFIG READ_URI PROMPT PROMPT_ARGUMENTS_JSON
//
// starts `HOST mcp -c CONFIG` over stdio, lists the resources, templates
// and prompts, reads READ_URI, gets PROMPT, and prints {"resources": [...],
// "templates": [...], "prompts": [...], "read": {...}, "prompt": {...}} on
// stdout. A failure exits 1 with the error on stderr.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [host, config, readURI, prompt, promptArgs] = process.argv.slice(2);
const transport = new StdioClientTransport({ command: host, args: ["mcp", "-c", config], stderr: "inherit" });
const client = new Client({ name: "ts-agent", version: "1.0.0" });
try {
  await client.connect(transport);
  const resources = await client.listResources();
  const templates = await client.listResourceTemplates();
  const prompts = await client.listPrompts();
  const read = await client.readResource({ uri: readURI });
  const got = await client.getPrompt({ name: prompt, arguments: JSON.parse(promptArgs) });
  process.stdout.write(JSON.stringify({
    resources: resources.resources.map((r) => r.uri),
    templates: templates.resourceTemplates.map((t) => t.uriTemplate),
    prompts: prompts.prompts.map((p) => p.name),
    read,
    prompt: got,
  }) + "\n");
  await client.close();
} catch (err) {
  process.stderr.write(String(err) + "\n");
  process.exit(1);
}
