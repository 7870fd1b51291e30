// The TypeScript SDK's subjects for bench/all.py: the current line,
// @modelcontextprotocol/server and @modelcontextprotocol/client 2.4.0 (with the
// Node HTTP adapter @modelcontextprotocol/node and zod 4), installed by
// bench/setup_ts.py into a cache directory next to this script's copy.
//
// The work is the same as trio_mcp's and the Python SDK's: a tool
// echo(text: string) whose result is one text block (no structuredContent), and
// big() whose result is one text block of 1 MiB. Every call checks its text.
//
//   node ts_bench.mjs inprocess ERA CALLS CONCURRENCY
//       Client and McpServer in this process over InMemoryTransport: legacy
//       through McpServer.connect(), modern through the serveStdio entry over
//       that transport (connect() alone serves only the handshake era).
//   node ts_bench.mjs stdio-server
//       serveStdio (its default lets the opening decide the era).
//   node ts_bench.mjs stdio ERA CALLS CONCURRENCY ROUNDS
//       spawns `node ts_bench.mjs stdio-server` with StdioClientTransport:
//       start-up (spawn -> connected), shutdown (close -> the child exited),
//       sequential, CONCURRENCY in flight, 1 MiB results.
//   node ts_bench.mjs http-server
//       createMcpHandler behind the Node adapter on 127.0.0.1, port 0 (its
//       default `legacy: 'stateless'`: both eras on one endpoint, no session);
//       prints its URL on stdout.
//   node ts_bench.mjs http ERA URL CALLS CONCURRENCY
//       StreamableHTTPClientTransport: sequential and CONCURRENCY in flight.
//
// ERA is `legacy` (versionNegotiation mode 'legacy': initialize, 2025-11-25) or
// `modern` (pinned to 2026-07-28: server/discover, then the _meta envelope).
// Each measuring mode prints one JSON object on stdout (rates in calls/s,
// times in ms, throughput in MiB/s).
import { createServer } from "node:http";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { Client, InMemoryTransport, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { toNodeHandler } from "@modelcontextprotocol/node";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";

const BIG = 1 << 20;
const MODERN = "2026-07-28";
const WARMUP = 200;
const ARGS = { text: "hello" };

function makeServer() {
  const server = new McpServer({ name: "bench", version: "1.0" });
  server.registerTool("echo", { inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({
    content: [{ type: "text", text }],
  }));
  const big = "x".repeat(BIG);
  server.registerTool("big", { inputSchema: z.object({}) }, async () => ({
    content: [{ type: "text", text: big }],
  }));
  return server;
}

function makeClient(era) {
  const mode = era === "modern" ? { pin: MODERN } : "legacy";
  return new Client({ name: "ts-bench", version: "1.0" }, { versionNegotiation: { mode } });
}

function checkEra(client, era) {
  const got = client.getProtocolEra();
  if (got !== era) throw new Error(`era ${era} requested, ${got} negotiated`);
}

async function echo(client) {
  const result = await client.callTool({ name: "echo", arguments: ARGS });
  if (result.content[0].text !== "hello") throw new Error(`wrong text: ${JSON.stringify(result)}`);
}

async function rates(client, calls, concurrency) {
  for (let i = 0; i < WARMUP; i++) await echo(client);
  let t0 = performance.now();
  for (let i = 0; i < calls; i++) await echo(client);
  const sequential = calls / ((performance.now() - t0) / 1000);
  const perTask = Math.floor(calls / concurrency);
  const worker = async () => {
    for (let i = 0; i < perTask; i++) await echo(client);
  };
  t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const concurrent = (perTask * concurrency) / ((performance.now() - t0) / 1000);
  return { sequential_calls_s: sequential, concurrent_calls_s: concurrent };
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function inprocess(era, calls, concurrency) {
  // Legacy: McpServer.connect(), the SDK's usual in-process pairing (and the
  // faster of the two). Modern: connect() serves only the handshake era, so the
  // serveStdio entry over the in-memory transport (it serves both eras).
  const [clientEnd, serverEnd] = InMemoryTransport.createLinkedPair();
  if (era === "legacy") {
    await makeServer().connect(serverEnd);
  } else {
    serveStdio(makeServer, { transport: serverEnd });
  }
  const client = makeClient(era);
  await client.connect(clientEnd);
  checkEra(client, era);
  const result = await rates(client, calls, concurrency);
  await client.close();
  return result;
}

function stdioTransport() {
  return new StdioClientTransport({
    command: process.execPath,
    args: [fileURLToPath(import.meta.url), "stdio-server"],
    env: process.env,
    stderr: "inherit",
  });
}

async function closeAndWaitExit(client, transport) {
  // Shutdown on EOF: close stdin, then the child exits (the transport's close
  // resolves once the child's `exit` event fired, escalating to signals only
  // after its own grace).
  await client.close();
  void transport;
}

async function stdio(era, calls, concurrency, rounds) {
  const result = {};
  const starts = [];
  const stops = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    const transport = stdioTransport();
    const client = makeClient(era);
    await client.connect(transport);
    checkEra(client, era);
    starts.push(performance.now() - t0);
    const t1 = performance.now();
    await closeAndWaitExit(client, transport);
    stops.push(performance.now() - t1);
  }
  result.startup_ms = median(starts);
  result.shutdown_ms = median(stops);
  const transport = stdioTransport();
  const client = makeClient(era);
  await client.connect(transport);
  checkEra(client, era);
  Object.assign(result, await rates(client, calls, concurrency));
  const n = 20;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const big = await client.callTool({ name: "big", arguments: {} });
    if (big.content[0].text.length !== BIG) throw new Error("wrong big result");
  }
  result.big_result_mib_s = n / ((performance.now() - t0) / 1000);
  await closeAndWaitExit(client, transport);
  return result;
}

async function http(era, url, calls, concurrency) {
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = makeClient(era);
  await client.connect(transport);
  checkEra(client, era);
  const result = await rates(client, calls, concurrency);
  await client.close();
  return result;
}

const [command, ...rest] = process.argv.slice(2);
if (command === "stdio-server") {
  serveStdio(makeServer);
} else if (command === "http-server") {
  const handle = toNodeHandler(createMcpHandler(makeServer));
  const server = createServer((req, res) => void handle(req, res));
  server.listen(0, "127.0.0.1", () => {
    console.log(`http://127.0.0.1:${server.address().port}/mcp`);
  });
  const stop = () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  };
  process.on("SIGTERM", stop);
  process.stdin.on("end", stop);
  process.stdin.resume();
} else {
  let result;
  if (command === "inprocess") {
    result = await inprocess(rest[0], Number(rest[1]), Number(rest[2]));
  } else if (command === "stdio") {
    result = await stdio(rest[0], Number(rest[1]), Number(rest[2]), Number(rest[3]));
  } else if (command === "http") {
    result = await http(rest[0], rest[1], Number(rest[2]), Number(rest[3]));
  } else {
    console.error("usage: see the comment at the top of ts_bench.mjs");
    process.exit(2);
  }
  console.log(JSON.stringify(result));
  process.exit(0);
}
