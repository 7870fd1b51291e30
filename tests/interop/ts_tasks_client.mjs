// The official TypeScript SDK v1's client, with its experimental tasks (2025-11-25
// form), against a stdio server given as argv[2..] (our tasks_trio_server.py in
// test_ts_tasks_interop.py). Prints one JSON line with what it saw.
//
// Events are ordered by what the server reports: a gated task stays "working"
// until this client calls open_gate; a task asking for input stays
// "input_required" until this client's elicitation handler is let go; the
// cancel is sent once the server wrote "stall started", and its effect is
// awaited as the line "stall cancelled".
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const RELATED = "io.modelcontextprotocol/related-task";
const TERMINAL = ["completed", "failed", "cancelled"];
const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command,
  args,
  env: { PYTHONPATH: process.env.PYTHONPATH ?? "" },
  stderr: "pipe",
});

// The server's stderr lines, and a way to wait for one.
const lines = [];
let changed = () => {};
let pending = "";
transport.stderr.on("data", (chunk) => {
  const parts = (pending + chunk.toString()).split("\n");
  pending = parts.pop();
  lines.push(...parts);
  changed();
});
const waitForLine = (line) =>
  new Promise((resolve) => {
    const look = () => (lines.includes(line) ? resolve() : (changed = look));
    look();
  });

// An error as {code, message}: what the SDK's promise rejected with.
async function outcome(promise) {
  try {
    return { ok: await promise };
  } catch (error) {
    return { code: error.code ?? null, message: String(error.message) };
  }
}

const client = new Client(
  { name: "ts-tasks-client", version: "1.0.0" },
  { capabilities: { elicitation: { form: {} } } },
);
// Elicitations wait for this client's go-ahead (see 3.).
let asked = () => {};
let answer = () => {};
const answered = new Promise((resolve) => (answer = resolve));
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked(request.params);
  return await answered;
});
await client.connect(transport);
const tasks = client.experimental.tasks;
const seen = {
  server: client.getServerVersion()?.name,
  tasksCapability: client.getServerCapabilities()?.tasks ?? null,
};
const listed = await client.listTools();
seen.taskSupport = Object.fromEntries(
  listed.tools.map((tool) => [tool.name, tool.execution?.taskSupport ?? null]),
);

// 1. A task made with a task-augmented tools/call (and a ttl), polled with
//    tasks/get while the gate is shut, then after it is opened, to its end.
const created = await client.request(
  { method: "tools/call", params: { name: "gated", arguments: { label: "first" } } },
  CreateTaskResultSchema,
  { task: { ttl: 60000 } },
);
const taskId = created.task.taskId;
seen.created = { status: created.task.status, ttl: created.task.ttl };
const statuses = [(await tasks.getTask(taskId)).status];
seen.opened = (await client.callTool({ name: "open_gate" })).content[0].text;
for (;;) {
  const task = await tasks.getTask(taskId);
  if (task.status !== statuses[statuses.length - 1]) statuses.push(task.status);
  if (TERMINAL.includes(task.status)) break;
  await new Promise((resolve) => setTimeout(resolve, task.pollInterval ?? 1000));
}
seen.statuses = statuses;
const result = await tasks.getTaskResult(taskId, CallToolResultSchema);
seen.result = { text: result.content[0].text, related: result._meta?.[RELATED] ?? null };

// 2. The SDK's callToolStream: an optional tool (task-augmented because the
//    tools/list said it may be), a required one, and one whose task fails.
async function stream(params) {
  const messages = [];
  for await (const message of tasks.callToolStream(params)) {
    if (message.type === "taskCreated") streamed.push(message.task.taskId);
    if (message.type === "taskCreated" || message.type === "taskStatus") {
      messages.push([message.type, message.task.status]);
    } else if (message.type === "result") {
      messages.push(["result", message.result.content[0].text]);
    } else {
      messages.push(["error", message.error.code, message.error.message]);
    }
  }
  return messages;
}
const streamed = [];
seen.streamOptional = await stream({ name: "gated", arguments: { label: "second" } });
seen.streamRequired = await stream({ name: "sift", arguments: { n: 3 } });
// Its plain callTool refuses a required tool itself (nothing is sent).
seen.plainRequired = await outcome(client.callTool({ name: "sift", arguments: { n: 1 } }));
seen.streamFailed = await stream({ name: "sour", arguments: {} });
// The stream gave no result for the failed task: ask tasks/result for it.
seen.failedResult = await tasks.getTaskResult(streamed[streamed.length - 1], CallToolResultSchema);

// 3. Input inside a task: our server's elicitation names the task, which is
//    input_required until the answer, given while this client waits in
//    tasks/result (the spec has the requestor call it on input_required).
const question = new Promise((resolve) => (asked = resolve));
const confirming = (
  await client.request(
    { method: "tools/call", params: { name: "confirm", arguments: { item: "tea" } } },
    CreateTaskResultSchema,
    { task: {} },
  )
).task;
const params = await question;
seen.question = { message: params.message, related: params._meta?.[RELATED] ?? null };
seen.confirmingId = confirming.taskId;
seen.whileAsked = (await tasks.getTask(confirming.taskId)).status;
const confirmed = tasks.getTaskResult(confirming.taskId, CallToolResultSchema);
answer({ action: "accept", content: { ok: true } });
const confirmedResult = await confirmed;
seen.confirmed = {
  text: confirmedResult.content[0].text,
  related: confirmedResult._meta?.[RELATED] ?? null,
};
seen.afterAnswer = (await tasks.getTask(confirming.taskId)).status;
// The same through callToolStream, the handler now answering at once: the
// stream switches to tasks/result if a poll sees input_required.
seen.streamInput = await stream({ name: "confirm", arguments: { item: "milk" } });

// 4. A task cancelled while its handler runs.
const stalled = await client.request(
  { method: "tools/call", params: { name: "stall", arguments: {} } },
  CreateTaskResultSchema,
  { task: {} },
);
const stallId = stalled.task.taskId;
await waitForLine("stall started");
seen.beforeCancel = (await tasks.getTask(stallId)).status;
const cancelled = await tasks.cancelTask(stallId);
seen.cancelled = { status: cancelled.status, statusMessage: cancelled.statusMessage ?? null };
await waitForLine("stall cancelled");
seen.afterCancel = (await tasks.getTask(stallId)).status;
seen.cancelledResult = await outcome(tasks.getTaskResult(stallId, CallToolResultSchema));
seen.cancelAgain = await outcome(tasks.cancelTask(stallId));
seen.unknown = await outcome(tasks.getTask("no-such-task"));

// 5. tasks/list: every task of this client.
const all = (await tasks.listTasks()).tasks;
seen.list = { count: all.length, statuses: all.map((task) => task.status).sort() };
seen.listHas = [taskId, ...streamed, confirming.taskId, stallId].every((id) => all.some((t) => t.taskId === id));

const pid = transport.pid;
await client.close();
seen.serverLines = lines;
// Whether the server process is gone once close() returned (it exits when its
// stdin ends; the SDK's close would signal it after 2 s otherwise).
try {
  process.kill(pid, 0);
  seen.serverGone = false;
} catch (error) {
  seen.serverGone = error.code === "ESRCH";
}
console.log(JSON.stringify(seen));
