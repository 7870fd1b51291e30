// A server written with the TypeScript SDK v1 (@modelcontextprotocol/sdk 1.32.2) for the
// checker's peer tests (tests/check/test_check_peers.py): tools the checks call.
//
//   node ts_v1_check_server.mjs stdio   StdioServerTransport
//   node ts_v1_check_server.mjs http    StreamableHTTPServerTransport, one per session
//                                       (Mcp-Session-Id), on node:http; prints its URL on
//                                       stdout once listening (127.0.0.1, port 0)
//
// Tools: add(a, b); sleep(seconds), which ends early when the call is cancelled;
// count(steps), which reports progress once per step, 50 ms apart.
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

function makeServer() {
  const server = new McpServer(
    { name: "ts-v1-check-server", version: "1.0.0" },
    { capabilities: { tools: { listChanged: true } } },
  );
  server.tool("add", "Add two integers.", { a: z.number(), b: z.number() }, async ({ a, b }) => ({
    content: [{ type: "text", text: String(a + b) }],
  }));
  server.tool(
    "sleep",
    "Wait for `seconds`, or until the call is cancelled.",
    { seconds: z.number() },
    async ({ seconds }, extra) => {
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, seconds * 1000);
        extra.signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
      });
      return { content: [{ type: "text", text: `slept ${seconds}s` }] };
    },
  );
  server.tool(
    "count",
    "Count to `steps`, reporting progress at each step.",
    { steps: z.number() },
    async ({ steps }, extra) => {
      const token = extra._meta?.progressToken;
      for (let done = 1; done <= steps; done++) {
        if (extra.signal.aborted) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
        if (token !== undefined) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: done, total: steps },
          });
        }
      }
      return { content: [{ type: "text", text: `counted ${steps}` }] };
    },
  );
  return server;
}

const mode = process.argv[2];
if (mode === "stdio") {
  await makeServer().connect(new StdioServerTransport());
} else if (mode === "http") {
  const transports = new Map();
  const http = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const text = Buffer.concat(chunks).toString();
    let body;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    const id = req.headers["mcp-session-id"];
    let transport = id ? transports.get(id) : undefined;
    if (!transport && req.method === "POST" && body && isInitializeRequest(body)) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => transports.set(sid, transport),
      });
      transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
      await makeServer().connect(transport);
    }
    if (!transport) {
      res.writeHead(id ? 404 : 400, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "No valid session" } }));
      return;
    }
    await transport.handleRequest(req, res, body);
  });
  http.listen(0, "127.0.0.1", () => {
    console.log(`http://127.0.0.1:${http.address().port}/mcp`);
  });
  process.stdin.on("end", () => {
    http.closeAllConnections();
    http.close(() => process.exit(0));
  });
  process.stdin.resume();
} else {
  process.stderr.write("usage: ts_v1_check_server.mjs stdio|http\n");
  process.exit(2);
}
