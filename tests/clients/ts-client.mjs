// An ACP client built on the official TypeScript SDK (`@agentclientprotocol/sdk` 2.4.0, app
// API) driving `zcode-acp --simulate` in one session: initialize, a streamed reply, an edit
// whose permission it approves, and a slow turn it cancels with `session/cancel`.
//
// Usage: node ts-client.mjs <zcode-acp> <workspace> <agent-stderr-log> [agent args…]
// (the agent args default to `--simulate`).
// Prints PASS/FAIL lines and `  # ` notes on what it received; exits non-zero on a failure.

import { spawn } from "node:child_process";
import { existsSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

import { Checks, assert, guard, note } from "./checks.mjs";

const [agentPath, workspace, stderrLog, ...agentArgs] = process.argv.slice(2);
if (!agentPath || !workspace || !stderrLog) {
  console.error("usage: node ts-client.mjs <zcode-acp> <workspace> <agent-stderr-log> [agent args…]");
  process.exit(2);
}

// Hang guards: one answer from the agent (a simulated turn takes well under a second), and the
// first `session/new`, which also loads the mapper (a cold debug build compiles it slowly).
const ANSWER_MS = 30_000;
const SESSION_NEW_MS = 300_000;
const EDIT_PATH = "ts-edit.txt";
const EDIT_CONTENT = "Written through the TypeScript SDK client.";

const checks = new Checks("ts-sdk", [
  "initialize",
  "streamed reply",
  "tool call",
  "permission",
  "cancel",
]);

const agent = spawn(agentPath, agentArgs.length > 0 ? agentArgs : ["--simulate"], {
  cwd: workspace,
  stdio: ["pipe", "pipe", openSync(stderrLog, "a")],
});
const agentExit = new Promise((resolve) => agent.on("exit", (code, signal) => resolve({ code, signal })));

/** Every `session/request_permission` the agent sent, with the option this client chose. */
const permissionRequests = [];

const app = acp.client({ name: "zcode-acp-ts-test" }).onRequest(
  acp.methods.client.session.requestPermission,
  (ctx) => {
    const allow = ctx.params.options.find((option) => option.kind === "allow_once");
    const chosen = allow ?? ctx.params.options.find((option) => option.kind.startsWith("allow"));
    permissionRequests.push({ params: ctx.params, chosen });
    if (!chosen) return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: chosen.optionId } };
  },
);

/** Reads updates until the turn stops; `onUpdate` may act on each one (e.g. cancel). */
async function collectTurn(session, onUpdate = async () => {}) {
  const updates = [];
  for (;;) {
    const message = await guard(session.nextUpdate(), ANSWER_MS, "next session/update");
    if (message.kind === "stop") return { updates, stopReason: message.stopReason };
    updates.push(message.update);
    await onUpdate(message.update);
  }
}

function textOf(updates, kind) {
  return updates
    .filter((u) => u.sessionUpdate === kind && u.content?.type === "text")
    .map((u) => u.content.text)
    .join("");
}

function summary(updates) {
  const counts = new Map();
  for (const u of updates) counts.set(u.sessionUpdate, (counts.get(u.sessionUpdate) ?? 0) + 1);
  return [...counts].map(([kind, n]) => `${kind}×${n}`).join(", ");
}

async function scenario(cx) {
  let initialized = false;
  await checks.run("initialize", async () => {
    const reply = await guard(
      cx.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
        clientInfo: { name: "zcode-acp-ts-test", version: "0" },
      }),
      ANSWER_MS,
      "initialize",
    );
    note(`initialize: protocolVersion ${reply.protocolVersion}, agentInfo ${JSON.stringify(reply.agentInfo)}`);
    assert(reply.protocolVersion === 1, `protocolVersion ${reply.protocolVersion}, expected 1`);
    assert(reply.agentInfo?.name === "zcode-acp", `agentInfo.name ${reply.agentInfo?.name}`);
    initialized = true;
  });
  if (!initialized) return;

  const session = await guard(cx.buildSession(workspace).start(), SESSION_NEW_MS, "session/new");
  note(`session/new: ${session.sessionId}`);

  await checks.run("streamed reply", async () => {
    session.prompt("Hello from the TypeScript SDK");
    const turn = await collectTurn(session);
    const chunks = turn.updates.filter((u) => u.sessionUpdate === "agent_message_chunk");
    const text = textOf(turn.updates, "agent_message_chunk");
    note(`reply: ${summary(turn.updates)}; text ${JSON.stringify(text)}; stopReason ${turn.stopReason}`);
    assert(chunks.length >= 2, `${chunks.length} agent_message_chunk, expected a stream of several`);
    assert(text.includes("You said: Hello from the TypeScript SDK"), "reply does not echo the prompt");
    assert(turn.stopReason === "end_turn", `stopReason ${turn.stopReason}`);
    return `${chunks.length} chunks, end_turn`;
  });

  const before = permissionRequests.length;
  const edit = await (async () => {
    try {
      session.prompt(`sim:edit ${EDIT_PATH} ${EDIT_CONTENT}`);
      return { turn: await collectTurn(session) };
    } catch (error) {
      return { error };
    }
  })();
  const asked = permissionRequests.slice(before);

  await checks.run("tool call", async () => {
    if (edit.error) throw edit.error;
    const { updates, stopReason } = edit.turn;
    note(`edit: ${summary(updates)}; stopReason ${stopReason}`);
    const call = updates.find((u) => u.sessionUpdate === "tool_call");
    assert(call, "no tool_call update");
    note(`tool_call: ${JSON.stringify({ id: call.toolCallId, title: call.title, kind: call.kind, status: call.status })}`);
    const finals = updates.filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call.toolCallId);
    const last = finals.at(-1);
    assert(last?.status === "completed", `last tool_call_update status ${last?.status}`);
    const file = join(workspace, EDIT_PATH);
    assert(existsSync(file), `${EDIT_PATH} was not written`);
    const content = readFileSync(file, "utf8");
    assert(content.startsWith(EDIT_CONTENT), `${EDIT_PATH} holds ${JSON.stringify(content)}`);
    assert(stopReason === "end_turn", `stopReason ${stopReason}`);
    return `${call.toolCallId} completed, ${EDIT_PATH} written`;
  });

  await checks.run("permission", async () => {
    if (edit.error) throw edit.error;
    assert(asked.length === 1, `${asked.length} permission requests, expected 1`);
    const [{ params, chosen }] = asked;
    const options = params.options.map((o) => `${o.optionId}:${o.kind}`).join(", ");
    note(`request_permission: toolCall ${params.toolCall.toolCallId}; options ${options}; chose ${chosen?.optionId}`);
    assert(chosen, "no allow option offered");
    assert(params.options.some((o) => o.kind.startsWith("reject")), "no reject option offered");
    const call = edit.turn.updates.find((u) => u.sessionUpdate === "tool_call");
    assert(params.toolCall.toolCallId === call?.toolCallId, "permission names another tool call");
    return `approved ${chosen.optionId}`;
  });

  await checks.run("cancel", async () => {
    let cancelSent = false;
    session.prompt("sim:slow 60000");
    const turn = await collectTurn(session, async (update) => {
      // Cancel once the turn is visibly running (its first chunk arrived).
      if (!cancelSent && update.sessionUpdate === "agent_message_chunk") {
        cancelSent = true;
        await cx.notify(acp.methods.agent.session.cancel, { sessionId: session.sessionId });
      }
    });
    note(`slow turn: ${summary(turn.updates)}; session/cancel sent: ${cancelSent}; stopReason ${turn.stopReason}`);
    assert(cancelSent, "the slow turn sent no chunk to cancel after");
    assert(turn.stopReason === "cancelled", `stopReason ${turn.stopReason}`);
    assert(!textOf(turn.updates, "agent_message_chunk").includes("done"), "the turn ran to its end");
    return "stopReason cancelled";
  });
  session.dispose();
}

const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
let crash;
try {
  await app.connectWith(stream, scenario);
} catch (error) {
  crash = error instanceof Error ? error.message : String(error);
}
agent.stdin.end();
const exit = await guard(agentExit, 10_000, "agent exit after stdin closed").catch((error) => {
  agent.kill("SIGKILL");
  return { code: null, signal: `killed: ${error.message}` };
});
note(`agent exited: code ${exit.code}${exit.signal ? `, ${exit.signal}` : ""}`);
process.exit(checks.finish(crash ? `client stopped: ${crash}` : "not reached"));
