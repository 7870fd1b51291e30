// The official TypeScript SDK's Streamable HTTP client against a server given by URL
// (our serve_http in the interop test): initialize, list and call tools, progress,
// ping, then DELETE. Prints one JSON line with what it saw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const transport = new StreamableHTTPClientTransport(new URL(process.argv[2]));
const client = new Client({ name: "ts-http-client", version: "1.0.0" });
await client.connect(transport);

const tools = await client.listTools();
const added = await client.callTool({ name: "add", arguments: { a: 2, b: 3 } });
const progress = [];
const counted = await client.callTool({ name: "count", arguments: { steps: 3 } }, undefined, {
  onprogress: (p) => progress.push([p.progress, p.total, p.message]),
});
const failed = await client.callTool({ name: "add", arguments: { a: "x", b: 1 } });
await client.ping();
const seen = {
  server: client.getServerVersion()?.name,
  protocol: transport.protocolVersion,
  hadSession: typeof transport.sessionId === "string" && transport.sessionId.length > 0,
  tools: tools.tools.map((t) => t.name).sort(),
  added: added.structuredContent,
  counted: counted.content[0].text,
  progress,
  invalidIsError: failed.isError === true,
};
await transport.terminateSession();
await client.close();
console.log(JSON.stringify(seen));
