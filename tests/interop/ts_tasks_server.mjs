// A stdio server with task tools, written with the official TypeScript SDK v1's
// experimental tasks (2025-11-25 form), for test_ts_tasks_interop.py.
//
// * brew({ms}): taskSupport "optional"; its work completes after ms milliseconds
//   with the text "brewed after <ms> ms".
// * steep(): taskSupport "required"; completes after 50 ms with "steeped".
// * spoil(): taskSupport "optional"; its work fails at once with an isError result.
// * simmer(): taskSupport "optional"; its work never ends by itself: it waits for
//   the task to be cancelled (tasks/cancel), then writes "simmer cancelled <id>"
//   to stderr.
// * sweeten(): taskSupport "optional"; its work asks the client "Sugar?" (a form
//   elicitation, {ok: boolean}) as a request related to the task: the SDK moves
//   the task to input_required and queues the request, delivering it only while
//   the client waits in tasks/result (the spec's input_required flow); once
//   answered the work sets the task working again and completes with
//   "sugar: <action> <ok>". The request's timeout is 1.5 s: the SDK never clears
//   the timeout of a queued request it got the answer to, which then fires and
//   sends notifications/cancelled for the answered request (the test waits for
//   that stray cancel; with the default 60 s it would come a minute later).
//
// The SDK's tasks/cancel only writes "cancelled" to the store; it has no hook to
// stop the work, so the store here is the SDK's InMemoryTaskStore plus an abort
// signal per task, fired when the store is told a task is cancelled.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  InMemoryTaskMessageQueue,
  InMemoryTaskStore,
} from "@modelcontextprotocol/sdk/experimental/tasks";
import { ElicitResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

class StoppableTaskStore extends InMemoryTaskStore {
  constructor() {
    super();
    this.aborts = new Map();
  }

  signalFor(taskId) {
    if (!this.aborts.has(taskId)) this.aborts.set(taskId, new AbortController());
    return this.aborts.get(taskId).signal;
  }

  async updateTaskStatus(taskId, status, statusMessage, sessionId) {
    await super.updateTaskStatus(taskId, status, statusMessage, sessionId);
    if (status === "cancelled") this.aborts.get(taskId)?.abort();
  }
}

const store = new StoppableTaskStore();
const server = new McpServer(
  { name: "ts-tasks", version: "1.0.0" },
  {
    capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
    taskStore: store,
    taskMessageQueue: new InMemoryTaskMessageQueue(),
  },
);

// A tool whose task's work, work(args, taskId, extra), gives [status, result].
function taskTool(name, description, taskSupport, inputSchema, work) {
  server.experimental.tasks.registerToolTask(
    name,
    { description, inputSchema, execution: { taskSupport } },
    {
      async createTask(args, extra) {
        const { taskStore, taskRequestedTtl } = extra;
        const task = await taskStore.createTask({ ttl: taskRequestedTtl, pollInterval: 20 });
        work(args, task.taskId, extra).then(([status, result]) =>
          taskStore.storeTaskResult(task.taskId, status, result).catch(() => {}),
        );
        return { task };
      },
      async getTask(_args, { taskId, taskStore }) {
        return await taskStore.getTask(taskId);
      },
      async getTaskResult(_args, { taskId, taskStore }) {
        return await taskStore.getTaskResult(taskId);
      },
    },
  );
}

const after = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (t, isError = false) => ({ content: [{ type: "text", text: t }], isError });

taskTool("brew", "Brew for ms milliseconds.", "optional", { ms: z.number() }, async ({ ms }) => {
  await after(ms);
  return ["completed", text(`brewed after ${ms} ms`)];
});

taskTool("steep", "Steep (only as a task).", "required", {}, async () => {
  await after(50);
  return ["completed", text("steeped")];
});

taskTool("spoil", "Fail with a tool error.", "optional", {}, async () => [
  "failed",
  text("the milk was off", true),
]);

taskTool("simmer", "Simmer until cancelled.", "optional", {}, async (_args, taskId) => {
  const signal = store.signalFor(taskId);
  await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
  process.stderr.write(`simmer cancelled ${taskId}\n`);
  return ["completed", text("never stored: the task is cancelled")];
});

taskTool("sweeten", "Ask whether to add sugar.", "optional", {}, async (_args, taskId, extra) => {
  const answer = await extra.sendRequest(
    {
      method: "elicitation/create",
      params: {
        mode: "form",
        message: "Sugar?",
        requestedSchema: {
          type: "object",
          properties: { ok: { type: "boolean" } },
          required: ["ok"],
        },
      },
    },
    ElicitResultSchema,
    { relatedTask: { taskId }, timeout: 1500 },
  );
  await extra.taskStore.updateTaskStatus(taskId, "working");
  return ["completed", text(`sugar: ${answer.action} ${answer.content?.ok}`)];
});

// The client's shutdown closes stdin: drop the store's ttl timers and close the
// server (which clears its request timers) so node exits.
process.stdin.on("end", () => {
  store.cleanup();
  server.close();
});
await server.connect(new StdioServerTransport());
