// A server written with the TypeScript SDK v2 (@modelcontextprotocol/server), for our
// client's interop tests (tests/interop/test_ts_v2_interop.py).
//
//   node ts_v2_server.mjs stdio          serveStdio, 2025-era opening served (its default)
//   node ts_v2_server.mjs stdio reject   `legacy: 'reject'`: initialize answered with -32022
//   node ts_v2_server.mjs http stateless createMcpHandler behind the Node adapter, default
//                                        `legacy: 'stateless'`: the handshake era without
//                                        sessions (no Mcp-Session-Id, GET answered 405)
//   node ts_v2_server.mjs http reject    `legacy: 'reject'`: initialize refused with 400
//                                        and -32022 naming the supported revisions
//
// Over HTTP it prints its URL on stdout once listening (127.0.0.1, port 0) and exits
// when its stdin ends. Its tool handlers report on stderr, one line each, so the test
// can wait on them: "sleep: started", then "sleep: aborted after N ms" when the
// handler's abort signal fired (the client's cancel reached it).
import { createServer } from "node:http";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";

function report(line) {
  process.stderr.write(`${line}\n`);
}

function makeServer() {
  const server = new McpServer({ name: "ts-v2-server", version: "2.0.0" });
  server.registerTool(
    "add",
    {
      description: "Add two numbers.",
      inputSchema: z.object({ a: z.number(), b: z.number() }),
    },
    async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
  );
  server.registerTool(
    "sleep",
    {
      description: "Wait for `seconds`, or until the call is cancelled.",
      inputSchema: z.object({ seconds: z.number() }),
    },
    async ({ seconds }, ctx) => {
      const signal = ctx.mcpReq.signal;
      const started = performance.now();
      report("sleep: started");
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, seconds * 1000);
        signal.addEventListener(
          "abort",
          () => {
            clearTimeout(timer);
            resolve();
          },
          { once: true },
        );
      });
      if (signal.aborted) {
        report(`sleep: aborted after ${(performance.now() - started).toFixed(1)} ms`);
        throw signal.reason ?? new Error("aborted");
      }
      return { content: [{ type: "text", text: `slept ${seconds}s` }] };
    },
  );
  return server;
}

const [transport, mode] = process.argv.slice(2);
if (transport === "stdio") {
  serveStdio(makeServer, { legacy: mode === "reject" ? "reject" : "serve" });
} else if (transport === "http" && (mode === "stateless" || mode === "reject")) {
  const handle = toNodeHandler(createMcpHandler(makeServer, { legacy: mode }));
  const http = createServer((req, res) => void handle(req, res));
  http.listen(0, "127.0.0.1", () => {
    console.log(`http://127.0.0.1:${http.address().port}/mcp`);
  });
  process.stdin.resume();
  process.stdin.on("end", () => {
    http.closeAllConnections();
    http.close(() => process.exit(0));
  });
} else {
  report("usage: ts_v2_server.mjs stdio [reject] | http stateless|reject");
  process.exit(2);
}
