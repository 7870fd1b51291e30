// A stdio server written with the official TypeScript SDK, for our client's interop test.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "ts-client-interop", version: "1.0.0" });

server.registerTool(
  "multiply",
  {
    description: "Multiply two numbers (structured output).",
    inputSchema: { a: z.number(), b: z.number() },
    outputSchema: { product: z.number() },
  },
  async ({ a, b }) => ({
    content: [{ type: "text", text: JSON.stringify({ product: a * b }) }],
    structuredContent: { product: a * b },
  }),
);

server.registerTool(
  "sample",
  { description: "Ask the client's model.", inputSchema: { text: z.string() } },
  async ({ text }) => {
    const result = await server.server.createMessage({
      messages: [{ role: "user", content: { type: "text", text } }],
      maxTokens: 20,
    });
    return { content: [{ type: "text", text: `${result.model}: ${result.content.text}` }] };
  },
);

server.registerTool("ask", { description: "Ask the user their name." }, async () => {
  const result = await server.server.elicitInput({
    message: "Your name?",
    requestedSchema: {
      type: "object",
      properties: { name: { type: "string", minLength: 1 } },
      required: ["name"],
    },
  });
  return { content: [{ type: "text", text: `${result.action}: ${result.content?.name}` }] };
});

server.registerTool("show_roots", { description: "List the client's roots." }, async () => {
  const { roots } = await server.server.listRoots();
  return { content: [{ type: "text", text: roots.map((r) => r.uri).join(",") }] };
});

server.registerResource("memo", "memo://ts", { description: "A memo." }, async (uri) => ({
  contents: [{ uri: uri.href, text: "from typescript" }],
}));

server.registerPrompt(
  "greet",
  { description: "Greet someone.", argsSchema: { name: z.string() } },
  ({ name }) => ({ messages: [{ role: "user", content: { type: "text", text: `Hello ${name}` } }] }),
);

await server.connect(new StdioServerTransport());
