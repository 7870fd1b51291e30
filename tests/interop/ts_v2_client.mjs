// A client written with the TypeScript SDK v2 (@modelcontextprotocol/client) against our
// servers, for tests/interop/test_ts_v2_interop.py.
//
//   node ts_v2_client.mjs MODE stdio COMMAND [ARG...]   spawn our stdio server
//   node ts_v2_client.mjs MODE http URL                 our Streamable HTTP endpoint
//
// MODE is the client's version negotiation: `legacy` (its default: the plain 2025
// handshake) or `auto` (`server/discover` first, going 2026-07-28 when the answer offers
// it and falling back to `initialize` otherwise; on stdio the probe runs on a throwaway
// sibling process).
//
// It connects, lists the tools, calls order_status, then calls sleep and aborts that
// call once our handler is running, pings (server/discover in the 2026-07-28 era, which
// has no ping), and closes. It prints one JSON object per step on stdout
// ({"event": ...}), so the test sees what happened and when; over HTTP the last one
// lists the method and status of every POST it sent.
//
// When to abort: over stdio it calls order_status again after sending the sleep call.
// Our server reads the one stream in order and starts each request's handler task as
// it reads it, so the sleep handler has entered its wait before the later call's
// answer can be written. (A ping would not do: the reader answers it at once, before
// the sleep handler's task has run.) Over HTTP the requests travel on separate
// connections, so it prints "sleeping" and waits for the test, which watches the
// handler in process, to write a line on stdin. Over stdio our server's stderr is
// piped here: "cancelStoppedMs" is the time from the abort to the handler's
// "sleep: handler cancelled after" line (null if none came within 10 s).
import { createInterface } from "node:readline";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [mode, kind, ...target] = process.argv.slice(2);
const emit = (event, fields = {}) => console.log(JSON.stringify({ event, ...fields }));
const stdinLines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

// Lines of the server's stderr (stdio only), and a way to wait for one.
const serverLog = [];
const logWaiters = [];
function onServerLog(line) {
  serverLog.push(line);
  for (const waiter of logWaiters.splice(0)) waiter();
}
async function serverLogLine(prefix) {
  for (;;) {
    const line = serverLog.find((l) => l.startsWith(prefix));
    if (line !== undefined) return line;
    await new Promise((resolve) => logWaiters.push(resolve));
  }
}

// Over HTTP: [JSON-RPC method, HTTP status or "aborted"] of each POST it sent, in order
// of their answers.
const posted = [];
async function recordingFetch(url, init) {
  const method =
    init?.method === "POST" && typeof init.body === "string"
      ? (JSON.parse(init.body).method ?? "(response)")
      : undefined;
  try {
    const response = await fetch(url, init);
    if (method) posted.push([method, response.status]);
    return response;
  } catch (error) {
    if (method) posted.push([method, error.name === "AbortError" ? "aborted" : error.name]);
    throw error;
  }
}

let transport;
let serverExited;
if (kind === "stdio") {
  const [command, ...args] = target;
  // env: the default keeps only a few variables; our server needs PYTHONPATH.
  transport = new StdioClientTransport({ command, args, env: process.env, stderr: "pipe" });
  createInterface({ input: transport.stderr }).on("line", onServerLog);
  serverExited = new Promise((resolve) => transport.stderr.on("end", resolve));
} else if (kind === "http") {
  transport = new StreamableHTTPClientTransport(new URL(target[0]), { fetch: recordingFetch });
} else {
  console.error("usage: ts_v2_client.mjs legacy|auto stdio COMMAND... | http URL");
  process.exit(2);
}

const client = new Client(
  { name: "ts-v2-client", version: "2.0.0" },
  { versionNegotiation: { mode } },
);
const connectStarted = performance.now();
await client.connect(transport);
emit("connected", {
  connectMs: performance.now() - connectStarted,
  server: client.getServerVersion()?.name,
  protocol: client.getNegotiatedProtocolVersion(),
  era: client.getProtocolEra(),
  sessionId: kind === "http" ? (transport.sessionId ?? null) : null,
});

const tools = await client.listTools();
emit("tools", { names: tools.tools.map((t) => t.name).sort() });

const order = await client.callTool({ name: "order_status", arguments: { order_id: "PT-1042" } });
emit("called", { text: order.content[0].text, isError: order.isError === true });

const abort = new AbortController();
const sleeping = client
  .callTool({ name: "sleep", arguments: { seconds: 60 } }, { signal: abort.signal })
  .then(
    () => "completed",
    (error) => `rejected: ${error.name}`,
  );
if (kind === "stdio") {
  await client.callTool({ name: "order_status", arguments: { order_id: "PT-2001" } });
} else {
  emit("sleeping");
  await stdinLines.next();
}
const abortedAt = performance.now();
abort.abort();
emit("aborted", { outcome: await sleeping });
if (kind === "stdio") {
  const line = await Promise.race([
    serverLogLine("sleep: handler cancelled after"),
    new Promise((resolve) => setTimeout(resolve, 10_000, null)),
  ]);
  emit("handler-stopped", { cancelStoppedMs: line && performance.now() - abortedAt, line });
}

// 2026-07-28 has no ping (the SDK refuses to send one there); server/discover is the
// request every modern server answers.
const modern = client.getProtocolEra() === "modern";
await (modern ? client.discover() : client.ping());
emit("pinged", { method: modern ? "server/discover" : "ping" });

if (kind === "http") {
  await transport.terminateSession();
}
await client.close();
if (kind === "stdio") {
  await serverExited;
}
emit("closed", { posted });
process.exit(0);
