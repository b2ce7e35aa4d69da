// An ACP v2 client built on the TypeScript SDK's v2 client API
// (`@agentclientprotocol/sdk/experimental/v2`, 2.4.0) driving `zcode-acp --simulate`: text, a
// tool call with its permission, a question (form elicitation), a plan, a held prompt and
// cancel, then — from a second agent process — resume with replay. Every frame the agent
// writes is validated against the v2 JSON Schema shipped in the SDK package
// (`schema/v2/schema.json`), as the last check.
//
// Usage: node ts-v2-client.mjs <zcode-acp> <workspace> <agent-stderr-log> [agent args…]
// (the agent args default to `--simulate`; pass e.g. `--simulate --simulate-version 3.12.3`).
// Prints PASS/FAIL lines and `  # ` notes on what it received; exits non-zero on a failure.

import { spawn } from "node:child_process";
import { existsSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough, Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";

import { Checks, assert, guard, note } from "./checks.mjs";
import { V2FrameChecker, lineSplitter } from "./v2-schema.mjs";

const [agentPath, workspace, stderrLog, ...extraArgs] = process.argv.slice(2);
if (!agentPath || !workspace || !stderrLog) {
  console.error("usage: node ts-v2-client.mjs <zcode-acp> <workspace> <agent-stderr-log> [agent args…]");
  process.exit(2);
}
const agentArgs = extraArgs.length > 0 ? extraArgs : ["--simulate"];

// Hang guards only: one answer (a simulated turn takes well under a second), and the first
// `session/new`, which also loads the mapper (a cold debug build compiles it slowly).
const ANSWER_MS = 30_000;
const SESSION_NEW_MS = 300_000;
const EDIT_PATH = "ts-v2-edit.txt";
const EDIT_CONTENT = "Written through the TypeScript SDK v2 client.";

const checks = new Checks("ts-sdk-v2", [
  "initialize",
  "streamed text",
  "tool call with permission",
  "question",
  "plan",
  "held prompt and cancel",
  "resume with replay",
  "every frame matches the v2 schema",
]);

const schema = new V2FrameChecker();

/** Starts the agent with its stdio tapped: every line both ways goes to the schema checker. */
function startAgent() {
  const child = spawn(agentPath, agentArgs, {
    cwd: workspace,
    stdio: ["pipe", "pipe", openSync(stderrLog, "a")],
  });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const fromAgent = new PassThrough();
  const received = lineSplitter((line) => schema.received(line));
  child.stdout.on("data", (chunk) => {
    received(chunk);
    fromAgent.write(chunk);
  });
  child.stdout.on("end", () => fromAgent.end());
  const sent = lineSplitter((line) => schema.sent(line));
  const toAgent = new Writable({
    write(chunk, _encoding, done) {
      sent(chunk);
      child.stdin.write(chunk, done);
    },
    final(done) {
      child.stdin.end();
      done();
    },
  });
  const stream = acp.ndJsonStream(Writable.toWeb(toAgent), Readable.toWeb(fromAgent));
  return { child, exited, stream };
}

async function stop(agent) {
  agent.child.stdin.end();
  const exit = await guard(agent.exited, 10_000, "agent exit after stdin closed").catch((error) => {
    agent.child.kill("SIGKILL");
    return { code: null, signal: `killed: ${error.message}` };
  });
  note(`agent exited: code ${exit.code}${exit.signal ? `, ${exit.signal}` : ""}`);
}

async function initialize(cx, capabilities) {
  return guard(
    cx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      info: { name: "zcode-acp-ts-v2-test", version: "0" },
      capabilities,
    }),
    ANSWER_MS,
    "initialize",
  );
}

/** Every question the agent asked this client, with what it answered. */
const asked = [];

const app = acp
  .client({ name: "zcode-acp-ts-v2-test" })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    const allow = params.options.find((option) => option.kind === "allow_once");
    asked.push({ method: "session/request_permission", params, chosen: allow?.optionId });
    if (!allow) return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  .onRequest(acp.methods.client.elicitation.create, ({ params }) => {
    const properties = params.requestedSchema?.properties ?? {};
    const content = {};
    for (const [name, property] of Object.entries(properties)) {
      // The plan approval offers `optionId` choices; a question offers choices per answer.
      if (name === "optionId") {
        content[name] = property.oneOf?.find((c) => String(c.const).startsWith("allow"))?.const ?? property.oneOf?.[0]?.const;
      } else if (property.type === "array") {
        content[name] = (property.items?.anyOf ?? property.items?.oneOf ?? []).map((c) => c.const);
      } else {
        content[name] = property.oneOf?.[0]?.const ?? property.enum?.[0] ?? "ok";
      }
    }
    asked.push({ method: "elicitation/create", params, content });
    return { action: "accept", content };
  });

/** Updates until the session goes idle; `onUpdate` may act on each one. */
async function collectTurn(session, onUpdate = async () => {}) {
  const updates = [];
  for (;;) {
    const message = await guard(session.nextUpdate(), ANSWER_MS, "next session/update");
    if (message.kind === "stop") return { updates, idle: message.update, stopReason: message.stopReason };
    updates.push(message.update);
    await onUpdate(message.update);
  }
}

const textOf = (updates, kind) =>
  updates
    .filter((u) => u.sessionUpdate === kind && u.content?.type === "text")
    .map((u) => u.content.text)
    .join("");
const states = (updates) => updates.filter((u) => u.sessionUpdate === "state_update").map((u) => u.state);
function summary(updates) {
  const counts = new Map();
  for (const u of updates) counts.set(u.sessionUpdate, (counts.get(u.sessionUpdate) ?? 0) + 1);
  return [...counts].map(([kind, n]) => `${kind}×${n}`).join(", ");
}

/** Sends a prompt, checks its acknowledgement and echo, and reads its turn. */
async function turn(session, text, onUpdate) {
  const ack = guard(session.prompt(text), ANSWER_MS, `prompt ${text}`);
  const result = await collectTurn(session, onUpdate);
  const { messageId } = await ack;
  const echo = result.updates.find((u) => u.sessionUpdate === "user_message");
  assert(typeof messageId === "string" && messageId.length > 0, `no messageId for ${JSON.stringify(text)}`);
  assert(echo?.messageId === messageId, `user_message echo ${echo?.messageId}, acknowledged ${messageId}`);
  return { messageId, ...result };
}

let sessionId;

async function firstConnection(cx) {
  let initialized = false;
  await checks.run("initialize", async () => {
    const reply = await initialize(cx, { elicitation: { form: {} } });
    note(`initialize: protocolVersion ${reply.protocolVersion}, info ${JSON.stringify(reply.info)}, capabilities ${JSON.stringify(reply.capabilities)}`);
    assert(reply.protocolVersion === 2, `protocolVersion ${reply.protocolVersion}`);
    assert(reply.info?.name === "zcode-acp", `info.name ${reply.info?.name}`);
    assert(reply.capabilities?.session, "no session capabilities");
    // `session.fork` is unstable: this stable API drops it from what it parses, whether the
    // agent advertised it or not (ts-fork-client.mjs checks fork with the unstable API).
    initialized = true;
  });
  if (!initialized) return;

  const session = await guard(cx.buildSession(workspace).start(), SESSION_NEW_MS, "session/new");
  sessionId = session.sessionId;
  note(`session/new: ${sessionId}; config options ${(session.configOptions ?? []).map((o) => `${o.configId}(${o.category})`).join(", ")}`);

  await checks.run("streamed text", async () => {
    const prompt = "Hello from the TypeScript SDK v2";
    const t = await turn(session, prompt);
    const chunks = t.updates.filter((u) => u.sessionUpdate === "agent_message_chunk");
    const text = textOf(t.updates, "agent_message_chunk");
    note(`reply: ${summary(t.updates)}; states ${states(t.updates)}; stopReason ${t.stopReason}; usage ${JSON.stringify(t.idle.usage)}`);
    assert(chunks.length >= 2, `${chunks.length} agent_message_chunk, expected a stream`);
    assert(new Set(chunks.map((c) => c.messageId)).size === 1, "the chunks of one reply name several messages");
    assert(text.includes(`You said: ${prompt}`), "reply does not echo the prompt");
    assert(states(t.updates)[0] === "running", `states ${states(t.updates)}`);
    assert(t.stopReason === "end_turn", `stopReason ${t.stopReason}`);
    return `${chunks.length} chunks of message ${chunks[0].messageId}, end_turn`;
  });

  await checks.run("tool call with permission", async () => {
    const before = asked.length;
    const t = await turn(session, `sim:edit ${EDIT_PATH} ${EDIT_CONTENT}`);
    const questions = asked.slice(before);
    note(`edit: ${summary(t.updates)}; states ${states(t.updates)}; stopReason ${t.stopReason}`);
    assert(questions.length === 1 && questions[0].method === "session/request_permission", `${questions.length} questions`);
    const { params } = questions[0];
    const callId = params.subject?.toolCall?.toolCallId;
    note(`request_permission: title ${JSON.stringify(params.title)}; subject ${params.subject?.type} ${callId}; chose ${questions[0].chosen}`);
    assert(params.title, "permission without a title");
    const calls = t.updates.filter((u) => u.toolCallId === callId);
    assert(calls.length >= 2 && calls.every((u) => u.sessionUpdate === "tool_call_update"), summary(calls));
    assert(calls.at(-1).status === "completed" || calls.some((u) => u.status === "completed"), "tool call not completed");
    const diff = calls.flatMap((u) => u.content ?? []).find((c) => c.type === "diff");
    assert(diff?.changes?.[0]?.path, `no v2 diff: ${JSON.stringify(calls)}`);
    assert(states(t.updates).join(",") === "running,requires_action,running", `states ${states(t.updates)}`);
    const file = join(workspace, EDIT_PATH);
    assert(existsSync(file) && readFileSync(file, "utf8").startsWith(EDIT_CONTENT), `${EDIT_PATH} not written`);
    assert(t.stopReason === "end_turn", `stopReason ${t.stopReason}`);
    return `${callId} completed after ${questions[0].chosen}, ${EDIT_PATH} written, diff patch ${diff.patch ? "present" : "absent"}`;
  });

  await checks.run("question", async () => {
    const before = asked.length;
    const t = await turn(session, "sim:question");
    const questions = asked.slice(before);
    note(`question: ${summary(t.updates)}; asked ${questions.map((q) => q.method)}; answered ${JSON.stringify(questions[0]?.content)}`);
    assert(questions.length === 1 && questions[0].method === "elicitation/create", `${questions.length} questions`);
    assert(questions[0].params.mode === "form", `mode ${questions[0].params.mode}`);
    assert(questions[0].params.scope?.sessionId === sessionId || questions[0].params.sessionId === sessionId, "question not scoped to the session");
    assert(states(t.updates).includes("requires_action"), `states ${states(t.updates)}`);
    assert(textOf(t.updates, "agent_message_chunk").includes("Thanks, I will proceed"), "the answers were not used");
    assert(t.stopReason === "end_turn", `stopReason ${t.stopReason}`);
    return "form answered, end_turn";
  });

  await checks.run("plan", async () => {
    const t = await turn(session, "sim:todos");
    const plans = t.updates.filter((u) => u.sessionUpdate === "plan_update");
    note(`todos: ${summary(t.updates)}; plans ${plans.map((p) => `${p.plan.planId}:${p.plan.entries?.length}`)}`);
    assert(plans.length >= 1, "no plan_update");
    assert(plans.every((p) => p.plan.type === "items" && Array.isArray(p.plan.entries)), JSON.stringify(plans));
    assert(plans.at(-1).plan.entries.length > 0, "the last plan is empty");
    assert(t.stopReason === "end_turn", `stopReason ${t.stopReason}`);
    return `${plans.length} plan_update, ${plans.at(-1).plan.entries.length} entries`;
  });

  await checks.run("held prompt and cancel", async () => {
    let cancelSent = false;
    let held;
    const slow = guard(session.prompt("sim:slow 60000"), ANSWER_MS, "slow prompt");
    const t = await collectTurn(session, async (update) => {
      if (!cancelSent && update.sessionUpdate === "agent_message_chunk") {
        // A prompt on the busy session is held, then answered -32800 by the cancel.
        held = session.prompt("held behind the slow turn").then(
          () => ({ inserted: true }),
          (error) => ({ code: error?.code }),
        );
        cancelSent = true;
        await cx.notify(acp.methods.agent.session.cancel, { sessionId });
      }
    });
    await slow;
    const heldOutcome = await guard(held, ANSWER_MS, "the held prompt's answer");
    note(`slow turn: ${summary(t.updates)}; cancel sent ${cancelSent}; stopReason ${t.stopReason}; held prompt ${JSON.stringify(heldOutcome)}`);
    assert(cancelSent, "the slow turn sent no chunk to cancel after");
    assert(t.stopReason === "cancelled", `stopReason ${t.stopReason}`);
    assert(heldOutcome.code === -32800, `held prompt ${JSON.stringify(heldOutcome)}`);
    assert(!textOf(t.updates, "agent_message_chunk").includes("done"), "the turn ran to its end");
    return "cancelled, held prompt -32800";
  });
  session.dispose();
}

let crash;
const first = startAgent();
try {
  await app.connectWith(first.stream, firstConnection);
} catch (error) {
  crash = error instanceof Error ? error.message : String(error);
}
await stop(first);

if (!crash && sessionId) {
  const second = startAgent();
  const replayed = [];
  let resumeAnswered = false;
  const resumer = acp
    .client({ name: "zcode-acp-ts-v2-resume" })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      if (params.sessionId === sessionId) replayed.push({ answeredBefore: resumeAnswered, update: params.update });
    });
  try {
    await resumer.connectWith(second.stream, async (cx) => {
      await initialize(cx, {});
      await checks.run("resume with replay", async () => {
        const response = await guard(
          cx.request(acp.methods.agent.session.resume, { sessionId, cwd: workspace, replayFrom: { type: "start" } }),
          SESSION_NEW_MS,
          "session/resume",
        );
        resumeAnswered = true;
        const before = replayed.filter((u) => !u.answeredBefore).map((u) => u.update);
        const kinds = before.map((u) => u.sessionUpdate);
        const marker = kinds.indexOf("replay_complete");
        note(`replayed before the answer: ${summary(before)}; answer ${JSON.stringify(response).slice(0, 120)}`);
        assert(marker >= 0, `no replay_complete: ${kinds}`);
        assert(kinds.filter((k) => k === "replay_complete").length === 1, "replay_complete twice");
        const history = before.slice(0, marker);
        assert(textOf(history, "user_message_chunk").includes("Hello from the TypeScript SDK v2"), "the first prompt was not replayed");
        assert(textOf(history, "agent_message_chunk").includes("You said: Hello from the TypeScript SDK v2"), "the first reply was not replayed");
        const state = before[marker + 1];
        assert(state?.sessionUpdate === "state_update" && state.state === "idle", `after the marker: ${JSON.stringify(state)}`);
        await guard(cx.request(acp.methods.agent.session.close, { sessionId }), ANSWER_MS, "session/close");
        return `${history.length} updates replayed, replay_complete, idle, then the answer`;
      });
    });
  } catch (error) {
    crash = error instanceof Error ? error.message : String(error);
  }
  await stop(second);
}

if (schema.counts.frames > 0) {
  await checks.run("every frame matches the v2 schema", async () => {
    note(`schema ${schema.schemaPath}: ${JSON.stringify(schema.counts)}`);
    const broken = schema.selfTest();
    assert(broken.length === 0, `the schema checker itself is broken: ${broken.join("; ")}`);
    for (const problem of schema.problems.slice(0, 5)) note(`schema: ${problem}`);
    assert(schema.problems.length === 0, `${schema.problems.length} frames break the v2 schema`);
    return `${schema.counts.frames} frames`;
  });
}
process.exit(checks.finish(crash ? `client stopped: ${crash}` : "not reached"));
