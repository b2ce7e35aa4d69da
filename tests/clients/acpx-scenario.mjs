// acpx 0.19.1, the headless ACP CLI client, driving `zcode-acp --simulate`. Every run uses
// `--format json`, which prints the whole JSON-RPC transcript (both directions), and the checks
// assert on that transcript, on acpx's exit code and on the workspace.
//
// Usage: node acpx-scenario.mjs <zcode-acp> <scratch-dir>
// HOME (acpx keeps its sessions and queues in $HOME/.acpx) and ZCODE_SIM_STATE come from the
// caller. Each run gets its own workspace under <scratch-dir>.

import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

import { Checks, assert, guard, note } from "./checks.mjs";

const [agentPath, scratch, ...agentArgs] = process.argv.slice(2);
if (!agentPath || !scratch) {
  console.error("usage: node acpx-scenario.mjs <zcode-acp> <scratch-dir> [agent args…]");
  process.exit(2);
}

const ACPX_CLI = join(dirname(createRequire(import.meta.url).resolve("acpx/package.json")), "dist/cli.js");
// The agent command acpx runs (arguments without spaces): `--simulate` unless given.
const AGENT = [agentPath, ...(agentArgs.length > 0 ? agentArgs : ["--simulate"])].join(" ");
// Hang guards (seconds): acpx's own --timeout per prompt, --ttl for the queue owner that
// `sessions new` leaves running, and an outer limit on any acpx process.
const TIMEOUT_S = 30;
const TTL_S = 5;
const PROCESS_LIMIT_MS = (TIMEOUT_S + 30) * 1000;
/** acpx's exit code for "a permission was denied" (from its dist; observed below). */
const EXIT_PERMISSION_DENIED = 5;

const checks = new Checks("acpx", [
  "exec: streamed reply",
  "exec: reasoning then reply",
  "exec --approve-all: edit allowed",
  "exec --deny-all: edit denied",
  "exec --approve-all: plan approved through a permission",
  "exec --deny-all: plan rejected, ZCode keeps planning",
  "sessions new + cancel: turn cancelled",
]);

let workspaceCount = 0;
function freshWorkspace(name) {
  workspaceCount += 1;
  const dir = join(scratch, `${String(workspaceCount).padStart(2, "0")}-${name}`);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Starts acpx with the agent and these arguments; resolves with its exit and output. */
function startAcpx(workspace, args, label) {
  const child = spawn(process.execPath, [ACPX_CLI, "--agent", AGENT, "--cwd", workspace, ...args], {
    cwd: workspace,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const listeners = [];
  child.stdout.on("data", (data) => {
    stdout += data;
    for (const listener of listeners) listener(stdout);
  });
  child.stderr.on("data", (data) => (stderr += data));
  const done = new Promise((resolve) => {
    child.on("close", (code, signal) => {
      writeFileSync(join(workspace, `../${label}.stdout`), stdout);
      writeFileSync(join(workspace, `../${label}.stderr`), stderr);
      resolve({ code, signal, stdout, stderr, messages: parseTranscript(stdout) });
    });
  });
  const finished = guard(done, PROCESS_LIMIT_MS, `acpx ${label}`).catch((error) => {
    child.kill("SIGTERM");
    throw error;
  });
  /** Resolves once acpx's stdout satisfies `predicate` (a hang guard bounds it). */
  const waitForOutput = (predicate, what) =>
    guard(
      new Promise((resolve) => {
        if (predicate(stdout)) return resolve();
        listeners.push((text) => predicate(text) && resolve());
      }),
      PROCESS_LIMIT_MS,
      what,
    );
  return { finished, waitForOutput };
}

function runAcpx(workspace, args, label) {
  return startAcpx(workspace, args, label).finished;
}

/** The JSON-RPC messages on acpx's stdout (one per line in `--format json`). */
function parseTranscript(text) {
  const messages = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    try {
      messages.push(JSON.parse(line));
    } catch {
      // Not part of the transcript (acpx prints only JSON in this mode; tolerate anything else).
    }
  }
  return messages;
}

function updatesOf(messages) {
  return messages.filter((m) => m.method === "session/update").map((m) => m.params.update);
}

function stopReasonOf(messages) {
  return messages.find((m) => m.result && "stopReason" in m.result)?.result.stopReason;
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
  return [...counts].map(([kind, n]) => `${kind}×${n}`).join(", ") || "no updates";
}

/** An acpx failure shown by its JSON error line or the tail of its stderr. */
function failureOf(run) {
  const error = run.messages.find((m) => m.error && m.id !== undefined && !m.method)?.error;
  if (error) return `${error.code} ${error.message}`;
  return run.stderr.trim().split("\n").slice(-3).join(" | ") || "no output";
}

/** The permission requests in the transcript, each with the option acpx selected. */
function permissionsOf(messages) {
  return messages
    .filter((m) => m.method === "session/request_permission")
    .map((request) => {
      const response = messages.find((m) => m.id === request.id && !m.method && m.result);
      const outcome = response?.result.outcome;
      const chosen = request.params.options.find((o) => o.optionId === outcome?.optionId);
      return { request, outcome, chosen };
    });
}

function describePermission({ request, outcome, chosen }) {
  const options = request.params.options.map((o) => `${o.optionId}:${o.kind}`).join(", ");
  return `request_permission for ${request.params.toolCall.toolCallId}; options ${options}; outcome ${JSON.stringify(outcome)}${chosen ? ` (${chosen.kind})` : ""}`;
}

/** The tool call and its last status update from one transcript. */
function toolCallOf(updates) {
  const call = updates.find((u) => u.sessionUpdate === "tool_call");
  if (!call) return { call: undefined, status: undefined };
  const statuses = updates
    .filter((u) => u.sessionUpdate === "tool_call_update" && u.toolCallId === call.toolCallId && u.status)
    .map((u) => u.status);
  return { call, status: statuses.at(-1) ?? call.status };
}

async function streamedReply() {
  const ws = freshWorkspace("stream");
  const run = await runAcpx(ws, ["--format", "json", "--timeout", `${TIMEOUT_S}`, "exec", "Hello from acpx"], "stream");
  const updates = updatesOf(run.messages);
  const chunks = updates.filter((u) => u.sessionUpdate === "agent_message_chunk");
  const text = textOf(updates, "agent_message_chunk");
  const stop = stopReasonOf(run.messages);
  note(`stream: exit ${run.code}; ${summary(updates)}; text ${JSON.stringify(text)}; stopReason ${stop}`);
  assert(run.code === 0, `acpx exit ${run.code}: ${failureOf(run)}`);
  assert(chunks.length >= 2, `${chunks.length} agent_message_chunk, expected a stream of several`);
  assert(text.includes("You said: Hello from acpx"), "reply does not echo the prompt");
  assert(stop === "end_turn", `stopReason ${stop}`);
  return `${chunks.length} chunks, end_turn`;
}

async function reasoning() {
  const ws = freshWorkspace("reason");
  const run = await runAcpx(ws, ["--format", "json", "--timeout", `${TIMEOUT_S}`, "exec", "sim:reason"], "reason");
  const updates = updatesOf(run.messages);
  const thought = textOf(updates, "agent_thought_chunk");
  const text = textOf(updates, "agent_message_chunk");
  const stop = stopReasonOf(run.messages);
  note(`reason: exit ${run.code}; ${summary(updates)}; thought ${JSON.stringify(thought)}; stopReason ${stop}`);
  assert(run.code === 0, `acpx exit ${run.code}: ${failureOf(run)}`);
  assert(thought.length > 0, "no agent_thought_chunk");
  const firstThought = updates.findIndex((u) => u.sessionUpdate === "agent_thought_chunk");
  const firstText = updates.findIndex((u) => u.sessionUpdate === "agent_message_chunk");
  assert(firstText > firstThought, "the reply did not follow the reasoning");
  assert(text.length > 0, "no reply text");
  assert(stop === "end_turn", `stopReason ${stop}`);
  return "agent_thought_chunk then agent_message_chunk, end_turn";
}

const EDIT_PATH = "acpx-edit.txt";
const EDIT_CONTENT = "Written through acpx.";

async function editAllowed() {
  const ws = freshWorkspace("approve");
  const run = await runAcpx(
    ws,
    ["--format", "json", "--timeout", `${TIMEOUT_S}`, "--approve-all", "exec", `sim:edit ${EDIT_PATH} ${EDIT_CONTENT}`],
    "approve",
  );
  const updates = updatesOf(run.messages);
  const permissions = permissionsOf(run.messages);
  const { call, status } = toolCallOf(updates);
  const stop = stopReasonOf(run.messages);
  note(`approve: exit ${run.code}; ${summary(updates)}; stopReason ${stop}`);
  permissions.forEach((p) => note(`approve: ${describePermission(p)}`));
  note(`approve: tool_call ${call?.toolCallId} "${call?.title}" last status ${status}`);
  assert(run.code === 0, `acpx exit ${run.code}: ${failureOf(run)}`);
  assert(permissions.length === 1, `${permissions.length} permission requests, expected 1`);
  const [{ request, outcome, chosen }] = permissions;
  assert(outcome?.outcome === "selected" && chosen?.kind.startsWith("allow"), "acpx did not select an allow option");
  assert(call && request.params.toolCall.toolCallId === call.toolCallId, "the permission names another tool call");
  assert(status === "completed", `tool call status ${status}`);
  const file = join(ws, EDIT_PATH);
  assert(existsSync(file), `${EDIT_PATH} was not written`);
  assert(readFileSync(file, "utf8").startsWith(EDIT_CONTENT), `${EDIT_PATH} has other content`);
  assert(stop === "end_turn", `stopReason ${stop}`);
  return `selected ${chosen.optionId}, tool call completed, ${EDIT_PATH} written`;
}

async function editDenied() {
  const ws = freshWorkspace("deny");
  const run = await runAcpx(
    ws,
    ["--format", "json", "--timeout", `${TIMEOUT_S}`, "--deny-all", "exec", `sim:edit ${EDIT_PATH} ${EDIT_CONTENT}`],
    "deny",
  );
  const updates = updatesOf(run.messages);
  const permissions = permissionsOf(run.messages);
  const { call, status } = toolCallOf(updates);
  const stop = stopReasonOf(run.messages);
  const text = textOf(updates, "agent_message_chunk");
  note(`deny: exit ${run.code}; ${summary(updates)}; text ${JSON.stringify(text)}; stopReason ${stop}`);
  permissions.forEach((p) => note(`deny: ${describePermission(p)}`));
  note(`deny: tool_call ${call?.toolCallId} last status ${status}`);
  assert(stop !== undefined, `no prompt result (acpx exit ${run.code}: ${failureOf(run)})`);
  assert(permissions.length === 1, `${permissions.length} permission requests, expected 1`);
  const [{ outcome, chosen }] = permissions;
  assert(outcome?.outcome === "selected" && chosen?.kind.startsWith("reject"), "acpx did not select a reject option");
  assert(call, "no tool_call update");
  assert(status === "failed", `tool call status ${status}, expected failed`);
  assert(!existsSync(join(ws, EDIT_PATH)), `${EDIT_PATH} was written despite the denial`);
  assert(stop === "end_turn", `stopReason ${stop}`);
  assert(run.code === EXIT_PERMISSION_DENIED, `acpx exit ${run.code}, expected ${EXIT_PERMISSION_DENIED} (permission denied)`);
  return `selected ${chosen.optionId}, tool call failed, no file, acpx exit ${run.code}`;
}

// acpx declares no form elicitation: ZCode's plan approval reaches it as an ordinary
// session/request_permission (issue 26), never as a failed turn.
async function planApproved() {
  const ws = freshWorkspace("plan-approve");
  const run = await runAcpx(ws, ["--format", "json", "--timeout", `${TIMEOUT_S}`, "--approve-all", "exec", "sim:plan"], "plan-approve");
  const updates = updatesOf(run.messages);
  const permissions = permissionsOf(run.messages);
  const stop = stopReasonOf(run.messages);
  note(`plan approve: exit ${run.code}; ${summary(updates)}; stopReason ${stop}`);
  permissions.forEach((p) => note(`plan approve: ${describePermission(p)}`));
  assert(run.code === 0, `acpx exit ${run.code}: ${failureOf(run)}`);
  assert(permissions.length === 1, `${permissions.length} permission requests, expected 1`);
  const [{ request, outcome, chosen }] = permissions;
  const kinds = request.params.options.map((o) => o.kind);
  assert(kinds.includes("reject_once"), `no reject option: ${kinds}`);
  assert(outcome?.outcome === "selected" && chosen?.kind.startsWith("allow"), "acpx did not select an allow option");
  assert(textOf(updates, "agent_message_chunk").includes("Plan approved"), "the plan was not approved");
  assert(stop === "end_turn", `stopReason ${stop}`);
  return `selected ${chosen.optionId} of ${kinds.join("/")}, plan approved, end_turn`;
}

async function planRejected() {
  const ws = freshWorkspace("plan-reject");
  const run = await runAcpx(ws, ["--format", "json", "--timeout", `${TIMEOUT_S}`, "--deny-all", "exec", "sim:plan"], "plan-reject");
  const updates = updatesOf(run.messages);
  const permissions = permissionsOf(run.messages);
  const stop = stopReasonOf(run.messages);
  note(`plan reject: exit ${run.code}; ${summary(updates)}; stopReason ${stop}`);
  permissions.forEach((p) => note(`plan reject: ${describePermission(p)}`));
  assert([0, EXIT_PERMISSION_DENIED].includes(run.code), `acpx exit ${run.code}: ${failureOf(run)}`);
  assert(permissions.length === 1, `${permissions.length} permission requests, expected 1`);
  const [{ outcome, chosen }] = permissions;
  assert(outcome?.outcome === "selected" && chosen?.kind.startsWith("reject"), "acpx did not select a reject option");
  assert(textOf(updates, "agent_message_chunk").includes("keep planning"), "ZCode did not keep planning");
  assert(stop === "end_turn", `stopReason ${stop}`);
  return `selected ${chosen.optionId}, ZCode keeps planning, end_turn, exit ${run.code}`;
}

async function cancelled() {
  const ws = freshWorkspace("cancel");
  const common = ["--ttl", `${TTL_S}`, "--timeout", `${TIMEOUT_S}`];
  const created = await runAcpx(ws, [...common, "sessions", "new"], "cancel-sessions-new");
  note(`cancel: sessions new exit ${created.code}, printed ${JSON.stringify(created.stdout.trim())}`);
  assert(created.code === 0, `sessions new exit ${created.code}: ${failureOf(created)}`);

  const slow = startAcpx(ws, [...common, "--format", "json", "sim:slow 60000"], "cancel-prompt");
  // Cancel once the turn is visibly running: its first chunk is in the transcript.
  const started = await Promise.race([
    slow.waitForOutput((text) => text.includes('"agent_message_chunk"'), "the slow turn's first chunk").then(() => true),
    slow.finished.then(() => false),
  ]);
  if (!started) {
    const run = await slow.finished;
    throw new Error(`the slow prompt ended before streaming (exit ${run.code}: ${failureOf(run)})`);
  }
  const cancel = await runAcpx(ws, ["cancel"], "cancel-cancel");
  note(`cancel: acpx cancel exit ${cancel.code}, printed ${JSON.stringify(cancel.stdout.trim())}`);
  const run = await slow.finished;
  const updates = updatesOf(run.messages);
  const sentCancel = run.messages.some((m) => m.method === "session/cancel");
  const stop = stopReasonOf(run.messages);
  note(`cancel: prompt exit ${run.code}; ${summary(updates)}; session/cancel in transcript: ${sentCancel}; stopReason ${stop}`);

  const closed = await runAcpx(ws, ["sessions", "close"], "cancel-sessions-close");
  note(`cancel: sessions close exit ${closed.code}`);

  assert(cancel.code === 0, `acpx cancel exit ${cancel.code}: ${failureOf(cancel)}`);
  assert(sentCancel, "no session/cancel in the transcript");
  assert(stop === "cancelled", `stopReason ${stop}`);
  assert(!textOf(updates, "agent_message_chunk").includes("done"), "the turn ran to its end");
  return "session/cancel sent, stopReason cancelled";
}

await checks.run("exec: streamed reply", streamedReply);
await checks.run("exec: reasoning then reply", reasoning);
await checks.run("exec --approve-all: edit allowed", editAllowed);
await checks.run("exec --deny-all: edit denied", editDenied);
await checks.run("exec --approve-all: plan approved through a permission", planApproved);
await checks.run("exec --deny-all: plan rejected, ZCode keeps planning", planRejected);
await checks.run("sessions new + cancel: turn cancelled", cancelled);
process.exit(checks.finish());
