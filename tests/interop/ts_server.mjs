// A stdio server written with the official TypeScript SDK (run by the interop tests).
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "ts-server", version: "1.0.0" });
server.tool("add", "Add two integers.", { a: z.number(), b: z.number() }, async ({ a, b }) => ({
  content: [{ type: "text", text: String(a + b) }],
}));
server.resource("greeting", "greeting://hello", async (uri) => ({
  contents: [{ uri: uri.href, text: "hello" }],
}));
await server.connect(new StdioServerTransport());
