// A client written with the TypeScript SDK v2 (@modelcontextprotocol/client 2.4.0)
// for modern-era (2026-07-28) interop: the TS twin of modern_sdk_client.py.
//
//   node ts_v2_modern_client.mjs [--mode=auto|pin] [--cancel=signal|timeout] COMMAND [ARG...]
//   node ts_v2_modern_client.mjs [--mode=auto|pin] [--cancel=signal|timeout] --http URL
//
// With --http it uses the SDK's StreamableHTTPClientTransport on URL instead of spawning
// a stdio server: the probe is one POST of server/discover (no sibling process), and in
// the 2026-07-28 era each request is its own POST, which the SDK aborts to cancel the
// request (HM-13) instead of POSTing notifications/cancelled. The server's event lines
// ("slow started", "slow cancelled") are then read from this script's stdin (the test
// copies the server's stderr lines there), and the closed step lists "exchanges": one
// [HTTP method, JSON-RPC method (a tools/call with the tool's name; null: no body;
// "(response)": a JSON-RPC response), status (null: no response head came, or the
// fetch failed), whether the response carried an Mcp-Session-Id] per HTTP request, in
// the order they were sent.
//
// It spawns COMMAND (with this process's environment) through StdioClientTransport and
// connects with `versionNegotiation: { mode: 'auto' }` (the default), or with
// `--mode=pin`, `{ mode: { pin: '2026-07-28' } }` (no fallback: a server that does not
// offer 2026-07-28 via server/discover fails the connect with ERA_NEGOTIATION_FAILED).
// On the SDK's own stdio transport the `server/discover` probe runs on a short-lived
// SIBLING process spawned from the same parameters (its stderr discarded), in both modes;
// the session's process is spawned once the era is known, and its first line is the
// first request of the chosen era (`tools/list` here, or `initialize` after a fallback).
// Then, one JSON object per step on stdout:
//
//   connect       the mode, the era (client.getProtocolEra()) and the negotiated version
//   tools         the sorted tool names
//   add           the text of add(a=2, b=3)
//   confirm       the text of confirm(item="order-7"); the elicitation/create handler
//                 answers accept {"ok": true} (the SDK's input-required driver runs the
//                 rounds inside callTool) and the step lists the messages it was asked
//   slow          starts slow and aborts it. --cancel=signal (the default) waits for the
//                 server's "slow started" stderr line and then aborts the call's
//                 AbortSignal (the SDK sends notifications/cancelled with the abort
//                 reason); --cancel=timeout passes the SDK's per-request `timeout` (500 ms)
//                 instead, which rejects with RequestTimeout and sends
//                 notifications/cancelled too. "stopped": the server then wrote
//                 "slow cancelled" (waited for up to 10 s)
//   listen        client.listen({toolsListChanged: true}), calls grow, waits for the
//                 notifications/tools/list_changed handler, lists the tools again, then
//                 closes the subscription (aborts the listen request and sends
//                 notifications/cancelled for it) and reports how it ended
//   after-listen  the text of add(a=1, b=1)
//   closed        client.close() returned and (over stdio) the server's stderr ended
//
// A failed step prints {"step": ..., "error": ...} and exits 1; a step the negotiated era
// cannot run prints {"step": ..., "unsupported": ...}. Exit 0 when every step ran.
// Server stderr lines other than the awaited ones are copied to this script's stderr.
import { createInterface } from "node:readline";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const STEP_BOUND_MS = 30_000;
const CANCEL_REACHED_BOUND_MS = 10_000;
const SLOW_TIMEOUT_MS = 500;
const EVENTS = new Set(["slow started", "slow cancelled"]);

const MODERN = "2026-07-28";
const argv = process.argv.slice(2);
let how = "signal";
let mode = "auto";
let http = false;
while (argv[0]?.startsWith("--")) {
  const option = argv.shift();
  if (option.startsWith("--cancel=")) how = option.slice("--cancel=".length);
  else if (option.startsWith("--mode=")) mode = option.slice("--mode=".length);
  else if (option === "--http") http = true;
  else how = undefined;
}
if (
  (how !== "signal" && how !== "timeout") ||
  (mode !== "auto" && mode !== "pin") ||
  argv.length === 0 ||
  (http && argv.length !== 1)
) {
  console.error(
    "usage: ts_v2_modern_client.mjs [--mode=auto|pin] [--cancel=signal|timeout] COMMAND [ARG...] | --http URL",
  );
  process.exit(2);
}
const emit = (step, fields = {}) => console.log(JSON.stringify({ step, ...fields }));

// The session process's stderr lines, and a way to wait for one.
const serverLog = [];
const logWaiters = [];
function onServerLog(line) {
  serverLog.push(line);
  if (!EVENTS.has(line)) process.stderr.write(`[server] ${line}\n`);
  for (const waiter of logWaiters.splice(0)) waiter();
}
async function serverLine(text) {
  while (!serverLog.includes(text)) await new Promise((resolve) => logWaiters.push(resolve));
}
const within = (ms, promise) =>
  Promise.race([promise, new Promise((_, reject) => setTimeout(reject, ms, new Error(`no answer in ${ms} ms`)).unref())]);

// Each step: bounded, and a failure prints its error line and exits 1.
async function step(name, body) {
  try {
    return await within(STEP_BOUND_MS, body());
  } catch (error) {
    emit(name, { error: `${error?.name ?? "Error"}: ${error?.message ?? String(error)}` });
    process.exit(1);
  }
}
const textOf = (result) => {
  const block = result.content?.[0];
  if (block?.type !== "text") throw new Error(`expected a text result, got ${JSON.stringify(result.content)}`);
  return block.text;
};

// Over HTTP: every request the SDK's fetch made (see the header comment).
const exchanges = [];
async function recordingFetch(url, init) {
  let label = null;
  if (init?.method === "POST" && typeof init.body === "string") {
    const body = JSON.parse(init.body);
    label = Array.isArray(body) ? "(batch)" : (body.method ?? "(response)");
    if (label === "tools/call") label += ` ${body.params.name}`;
  }
  const entry = [init?.method ?? "GET", label, null, false];
  exchanges.push(entry);
  const response = await fetch(url, init);
  entry[2] = response.status;
  entry[3] = response.headers.has("mcp-session-id");
  return response;
}

let transport;
let serverExited;
if (http) {
  transport = new StreamableHTTPClientTransport(new URL(argv[0]), { fetch: recordingFetch });
  createInterface({ input: process.stdin }).on("line", onServerLog);
  serverExited = Promise.resolve();
} else {
  const [command, ...args] = argv;
  // env: the default keeps only a few variables; a Python server needs PYTHONPATH and the like.
  transport = new StdioClientTransport({ command, args, env: process.env, stderr: "pipe" });
  createInterface({ input: transport.stderr }).on("line", onServerLog);
  serverExited = new Promise((resolve) => transport.stderr.on("end", resolve));
}

const client = new Client(
  { name: "ts-v2-modern-client", version: "2.4.0" },
  {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: mode === "pin" ? { pin: MODERN } : "auto" },
  },
);
const asked = [];
client.setRequestHandler("elicitation/create", async (request) => {
  asked.push(request.params.message);
  return { action: "accept", content: { ok: true } };
});
const toolChanges = [];
const changeWaiters = [];
client.setNotificationHandler("notifications/tools/list_changed", (notification) => {
  toolChanges.push(notification);
  for (const waiter of changeWaiters.splice(0)) waiter();
});

await step("connect", () => client.connect(transport, { timeout: STEP_BOUND_MS }));
const era = client.getProtocolEra();
emit("connect", {
  mode,
  era,
  protocolVersion: client.getNegotiatedProtocolVersion(),
  server: client.getServerVersion()?.name ?? null,
});

await step("tools", async () => {
  const tools = await client.listTools();
  emit("tools", { names: tools.tools.map((t) => t.name).sort() });
});
await step("add", async () => {
  emit("add", { text: textOf(await client.callTool({ name: "add", arguments: { a: 2, b: 3 } })) });
});
await step("confirm", async () => {
  const result = await client.callTool({ name: "confirm", arguments: { item: "order-7" } });
  emit("confirm", { text: textOf(result), asked });
});
await step("slow", async () => {
  let outcome;
  if (how === "signal") {
    const abort = new AbortController();
    const call = client.callTool({ name: "slow", arguments: {} }, { signal: abort.signal }).then(
      () => "completed",
      (error) => `rejected: ${error.name} ${error.code ?? ""}`.trim(),
    );
    await serverLine("slow started");
    abort.abort("client cancelled slow");
    outcome = await call;
  } else {
    outcome = await client.callTool({ name: "slow", arguments: {} }, { timeout: SLOW_TIMEOUT_MS }).then(
      () => "completed",
      (error) => `rejected: ${error.name} ${error.code ?? ""}`.trim(),
    );
  }
  const stopped = await within(CANCEL_REACHED_BOUND_MS, serverLine("slow cancelled")).then(
    () => true,
    () => false,
  );
  emit("slow", { cancel: how, outcome, stopped });
  if (!stopped) process.exit(1);
});
if (era !== "modern") {
  emit("listen", { unsupported: "subscriptions/listen needs the 2026-07-28 era" });
} else {
  await step("listen", async () => {
    const sub = await client.listen({ toolsListChanged: true });
    const grown = textOf(await client.callTool({ name: "grow", arguments: {} }));
    while (toolChanges.length === 0) await new Promise((resolve) => changeWaiters.push(resolve));
    const tools = await client.listTools(undefined, { cacheMode: "refresh" });
    await sub.close();
    emit("listen", {
      honored: sub.honoredFilter,
      grew: grown,
      event: toolChanges[0].method,
      tools: tools.tools.map((t) => t.name).sort(),
      ended: await sub.closed,
    });
  });
}
await step("after-listen", async () => {
  emit("after-listen", { text: textOf(await client.callTool({ name: "add", arguments: { a: 1, b: 1 } })) });
});
await step("closed", async () => {
  await client.close();
  await serverExited;
  emit("closed", http ? { exchanges } : {});
});
process.exit(0);
