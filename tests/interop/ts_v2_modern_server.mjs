// A stdio server written with the TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0)
// for modern-era (2026-07-28) interop.
//
//   node ts_v2_modern_server.mjs          serveStdio with `legacy: 'reject'`: only a
//                                         modern opening is served; `initialize` (or any
//                                         request without the _meta envelope) is answered
//                                         with -32022 naming 2026-07-28
//   node ts_v2_modern_server.mjs serve    serveStdio's default `legacy: 'serve'`: the
//                                         first message decides the era
//
// Tools (the same as modern_sdk_server.py):
//   add(a, b)      a + b
//   slow()         writes "slow started" to stderr, waits an hour; when the client's
//                  cancel aborts the handler's signal it writes "slow cancelled"
//   confirm(item)  returns inputRequired({inputRequests: {ok: elicit {ok: boolean}}});
//                  the retry carrying inputResponses.ok gets "confirmed <item>" when it
//                  was accept with ok true, "declined" otherwise
//   grow()         registers a new tool (grown1, grown2, ...); McpServer then emits
//                  notifications/tools/list_changed, which serveStdio's listen router
//                  stamps with the subscription id and writes to every open
//                  subscriptions/listen stream that asked for tools changes
//
// Its stderr carries only those event lines (and onerror reports, prefixed "error:").
import { acceptedContent, inputRequired, inputResponse, McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";

const SLOW_MS = 3_600_000;
const CONFIRM_KEY = "ok";
const confirmation = z.object({ ok: z.boolean() });

function report(line) {
  process.stderr.write(`${line}\n`);
}

function makeServer() {
  const server = new McpServer({ name: "ts-v2-modern-server", version: "2.4.0" });
  let grown = 0;
  server.registerTool(
    "add",
    { description: "Add two numbers.", inputSchema: z.object({ a: z.number(), b: z.number() }) },
    async ({ a, b }) => ({ content: [{ type: "text", text: String(a + b) }] }),
  );
  server.registerTool(
    "slow",
    { description: "Wait an hour, or until the call is cancelled.", inputSchema: z.object({}) },
    async (_args, ctx) => {
      const signal = ctx.mcpReq.signal;
      report("slow started");
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, SLOW_MS);
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
        report("slow cancelled");
        throw signal.reason ?? new Error("cancelled");
      }
      return { content: [{ type: "text", text: "slept" }] };
    },
  );
  server.registerTool(
    "confirm",
    { description: "Ask the client to confirm an item.", inputSchema: z.object({ item: z.string() }) },
    async ({ item }, ctx) => {
      const answer = inputResponse(ctx.mcpReq.inputResponses, CONFIRM_KEY);
      if (answer.kind === "missing") {
        // First round: nothing to keep between rounds (the item comes back in the
        // retried call's arguments), so no requestState.
        return inputRequired({
          inputRequests: {
            [CONFIRM_KEY]: inputRequired.elicit({
              message: `Confirm ${item}?`,
              requestedSchema: confirmation,
            }),
          },
        });
      }
      const content = acceptedContent(ctx.mcpReq.inputResponses, CONFIRM_KEY, confirmation);
      const text = content?.ok === true ? `confirmed ${item}` : "declined";
      return { content: [{ type: "text", text }] };
    },
  );
  server.registerTool(
    "grow",
    { description: "Register one more tool.", inputSchema: z.object({}) },
    async () => {
      grown += 1;
      const name = `grown${grown}`;
      // registerTool on a connected McpServer sends notifications/tools/list_changed.
      server.registerTool(
        name,
        { description: "A tool added by grow().", inputSchema: z.object({}) },
        async () => ({ content: [{ type: "text", text: `${name} here` }] }),
      );
      return { content: [{ type: "text", text: name }] };
    },
  );
  return server;
}

const mode = process.argv[2] ?? "reject";
if (mode !== "reject" && mode !== "serve") {
  report("usage: ts_v2_modern_server.mjs [reject|serve]");
  process.exit(2);
}
serveStdio(makeServer, { legacy: mode, onerror: (error) => report(`error: ${error.message}`) });
