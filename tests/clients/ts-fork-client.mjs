// `session/fork` through the TypeScript SDK (`@agentclientprotocol/sdk` 2.4.0): over ACP v1
// with the SDK's unstable API (`@agentclientprotocol/sdk/unstable`) and over ACP v2 with its
// v2 unstable API (`…/experimental/v2/unstable`), one agent process each. Every frame both
// ways is validated against the *unstable* JSON Schema the SDK ships for that version
// (`schema/v1/schema.unstable.json`, `schema/v2/schema.unstable.json`): `session/fork` is
// unstable in ACP, so neither stable schema (`schema/v1/schema.json`, `schema/v2/schema.json`)
// defines it.
//
// On a release whose ZCode forks (V4 `forkAssistant`: every Desktop 3.14–4.0 through the
// app-server, desktop-4.0.0 being the default, and every runtime through the Services Server): a session with two finished turns is forked; the fork request and answer
// match the schema's `ForkSessionRequest`/`ForkSessionResponse`, the fork replays both turns
// (v2: then `replay_complete` and an idle `state_update`) before its answer, takes a prompt of
// its own, and the parent sees none of it. On any other release fork is not advertised and
// `session/fork` is refused with -32601, and those frames are validated the same way.
//
// Usage: node ts-fork-client.mjs <zcode-acp> <workspace> <agent-stderr-log> [agent args…]
// Prints PASS/FAIL lines and `  # ` notes; exits non-zero on a failure.

import { spawn } from "node:child_process";
import { openSync } from "node:fs";
import { PassThrough, Readable, Writable } from "node:stream";
import * as v1 from "@agentclientprotocol/sdk/unstable";
import * as v2 from "@agentclientprotocol/sdk/experimental/v2/unstable";

import { Checks, assert, guard, note } from "./checks.mjs";
import { FrameChecker, lineSplitter } from "./v2-schema.mjs";

const [agentPath, workspace, stderrLog, ...extraArgs] = process.argv.slice(2);
if (!agentPath || !workspace || !stderrLog) {
  console.error("usage: node ts-fork-client.mjs <zcode-acp> <workspace> <agent-stderr-log> [agent args…]");
  process.exit(2);
}
const agentArgs = extraArgs.length > 0 ? extraArgs : ["--simulate"];
// The releases whose simulated ZCode forks: the V4 generations, Desktop (app-server) and runtime
// (Services Server); not the task protocol's 3.11.2 and 3.12.3. `--simulate` alone plays
// desktop-4.0.0.
const versionAt = agentArgs.indexOf("--simulate-version");
const release = versionAt >= 0 ? agentArgs[versionAt + 1] : "desktop-4.0.0";
const FORKS = /^(desktop|runtime)-/.test(release);
const METHOD_NOT_FOUND = -32601;

// Hang guards only: one answer, and the first `session/new`, which also loads the mapper.
const ANSWER_MS = 30_000;
const SESSION_NEW_MS = 300_000;

const checks = new Checks("ts-sdk-fork", [
  "v1 (unstable): fork",
  "v1: every frame matches schema/v1/schema.unstable.json",
  "v2: fork",
  "v2: every frame matches schema/v2/schema.unstable.json",
]);

/**
 * Starts the agent with its stdio tapped: every line both ways goes to `checker`, and every
 * agent frame is kept in order in `frames` (waiters are woken on each).
 */
function startAgent(sdk, checker) {
  const child = spawn(agentPath, agentArgs, { cwd: workspace, stdio: ["pipe", "pipe", openSync(stderrLog, "a")] });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  const frames = [];
  const waiters = new Set();
  const fromAgent = new PassThrough();
  const received = lineSplitter((line) => {
    checker.received(line);
    try {
      frames.push(JSON.parse(line));
    } catch {
      // the checker reports it
    }
    for (const wake of waiters) wake();
  });
  child.stdout.on("data", (chunk) => {
    received(chunk);
    fromAgent.write(chunk);
  });
  child.stdout.on("end", () => fromAgent.end());
  const sent = lineSplitter((line) => checker.sent(line));
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
  /** Resolves with `find(frames)` once it is not undefined. */
  const waitFor = (what, find) =>
    guard(
      new Promise((resolve) => {
        const wake = () => {
          const found = find(frames);
          if (found !== undefined) {
            waiters.delete(wake);
            resolve(found);
          }
        };
        waiters.add(wake);
        wake();
      }),
      ANSWER_MS,
      what,
    );
  const stream = sdk.ndJsonStream(Writable.toWeb(toAgent), Readable.toWeb(fromAgent));
  return { child, exited, frames, waitFor, stream };
}

async function stop(agent) {
  agent.child.stdin.end();
  const exit = await guard(agent.exited, 10_000, "agent exit after stdin closed").catch((error) => {
    agent.child.kill("SIGKILL");
    return { code: null, signal: `killed: ${error.message}` };
  });
  note(`agent exited: code ${exit.code}${exit.signal ? `, ${exit.signal}` : ""}`);
}

/** The `session/update`s of `session` among `frames`, in order. */
function updatesOf(frames, session) {
  return frames
    .filter((f) => f.method === "session/update" && f.params?.sessionId === session)
    .map((f) => f.params.update);
}

/** The updates of `session` written before the first answer that names it (the fork's). */
function beforeAnswer(frames, session) {
  const answer = frames.findIndex((f) => f.method === undefined && f.result?.sessionId === session);
  return updatesOf(answer < 0 ? frames : frames.slice(0, answer), session);
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

/** Calls `request`; resolves with its JSON-RPC error code (or throws if it succeeded). */
async function refusal(request, what) {
  try {
    const result = await guard(request, ANSWER_MS, what);
    throw new Error(`${what} succeeded: ${JSON.stringify(result).slice(0, 200)}`);
  } catch (error) {
    if (error?.code === undefined) throw error;
    return { code: error.code, message: error.message };
  }
}

/** The schema check of one connection: the checker proves it can fail, then every frame. */
function schemaCheck(name, checker, forkMethods) {
  return checks.run(name, async () => {
    note(`${checker.schemaPath}: ${JSON.stringify(checker.counts)}`);
    const broken = checker.forkSelfTest();
    assert(broken.length === 0, `the schema checker itself is broken: ${broken.join("; ")}`);
    for (const problem of [...checker.sentProblems, ...checker.problems].slice(0, 5)) note(`schema: ${problem}`);
    assert(checker.sentProblems.length === 0, `${checker.sentProblems.length} client requests break it`);
    assert(checker.problems.length === 0, `${checker.problems.length} agent frames break it`);
    const missing = forkMethods.filter((what) => !checker.valid.get(what));
    assert(missing.length === 0, `never validated: ${missing.join(", ")}`);
    const fork = forkMethods.map((what) => `${what}×${checker.valid.get(what)}`).join(", ");
    return `${checker.counts.frames + checker.counts.sent} frames; ${fork}`;
  });
}

// --- ACP v1, unstable ------------------------------------------------------------------------
const v1Schema = new FrameChecker("v1/schema.unstable.json");
let crash;
{
  const agent = startAgent(v1, v1Schema);
  const app = v1.client({ name: "zcode-acp-ts-fork-test" });
  try {
    await app.connectWith(agent.stream, async (cx) => {
      await checks.run("v1 (unstable): fork", async () => {
        const init = await guard(
          cx.request(v1.methods.agent.initialize, {
            protocolVersion: v1.PROTOCOL_VERSION,
            clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
            clientInfo: { name: "zcode-acp-ts-fork-test", version: "0" },
          }),
          ANSWER_MS,
          "initialize",
        );
        const advertised = init.agentCapabilities?.sessionCapabilities?.fork;
        note(`${release}: sessionCapabilities.fork ${JSON.stringify(advertised)}`);
        const created = await guard(
          cx.request(v1.methods.agent.session.new, { cwd: workspace, mcpServers: [] }),
          SESSION_NEW_MS,
          "session/new",
        );
        const parent = created.sessionId;
        const prompt = (sessionId, text) =>
          guard(
            cx.request(v1.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] }),
            ANSWER_MS,
            `session/prompt ${text}`,
          );
        for (const words of ["first words", "second words"]) {
          const answer = await prompt(parent, words);
          assert(answer.stopReason === "end_turn", `${words}: stopReason ${answer.stopReason}`);
        }
        const fork = cx.request(v1.methods.agent.session.fork, { sessionId: parent, cwd: workspace, mcpServers: [] });
        if (!FORKS) {
          assert(advertised === undefined, `fork advertised on ${release}`);
          const refused = await refusal(fork, "session/fork");
          note(`session/fork: ${refused.code} ${refused.message}`);
          assert(refused.code === METHOD_NOT_FOUND, `code ${refused.code}`);
          return `${release}: not advertised, refused ${refused.code}`;
        }
        assert(advertised !== undefined && advertised !== null, `fork not advertised on ${release}`);
        const parentUpdates = updatesOf(agent.frames, parent).length;
        const forked = await guard(fork, SESSION_NEW_MS, "session/fork");
        const child = forked.sessionId;
        assert(typeof child === "string" && child !== parent, `the fork's sessionId ${child}`);
        const replayed = beforeAnswer(agent.frames, child);
        note(`fork ${child}: replayed before the answer: ${summary(replayed)}`);
        const users = replayed.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content?.text);
        assert(JSON.stringify(users) === JSON.stringify(["first words", "second words"]), `user messages ${users}`);
        assert(textOf(replayed, "agent_message_chunk").includes("You said: second words"), "the answers were not replayed");
        const third = await prompt(child, "third words");
        assert(third.stopReason === "end_turn", `the fork's prompt: stopReason ${third.stopReason}`);
        assert(textOf(updatesOf(agent.frames, child), "agent_message_chunk").includes("You said: third words"), "no reply in the fork");
        assert(updatesOf(agent.frames, parent).length === parentUpdates, "the parent saw updates of the fork");
        return `${replayed.length} updates replayed, then the answer; the fork's prompt end_turn`;
      });
    });
  } catch (error) {
    crash = error instanceof Error ? error.message : String(error);
  }
  await stop(agent);
}
const forkFrames = FORKS ? ["request session/fork", "response session/fork", "notification session/update"] : ["request session/fork"];
await schemaCheck("v1: every frame matches schema/v1/schema.unstable.json", v1Schema, forkFrames);

// --- ACP v2, unstable ------------------------------------------------------------------------
const v2Schema = new FrameChecker("v2/schema.unstable.json");
{
  const agent = startAgent(v2, v2Schema);
  const app = v2.client({ name: "zcode-acp-ts-fork-test" });
  try {
    await app.connectWith(agent.stream, async (cx) => {
      await checks.run("v2: fork", async () => {
        const init = await guard(
          cx.request(v2.methods.agent.initialize, {
            protocolVersion: v2.PROTOCOL_VERSION,
            info: { name: "zcode-acp-ts-fork-test", version: "0" },
            capabilities: {},
          }),
          ANSWER_MS,
          "initialize",
        );
        const advertised = init.capabilities?.session?.fork;
        note(`${release}: capabilities.session.fork ${JSON.stringify(advertised)}`);
        const created = await guard(cx.request(v2.methods.agent.session.new, { cwd: workspace }), SESSION_NEW_MS, "session/new");
        const parent = created.sessionId;
        /** Prompts and waits for the session's `n`-th turn end (an idle state with a stop reason). */
        const turn = async (sessionId, text, n) => {
          await guard(
            cx.request(v2.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] }),
            ANSWER_MS,
            `session/prompt ${text}`,
          );
          return agent.waitFor(`turn end ${n} of ${sessionId}`, (frames) => {
            const ends = updatesOf(frames, sessionId).filter((u) => u.sessionUpdate === "state_update" && u.state === "idle" && u.stopReason);
            return ends.length >= n ? ends[n - 1] : undefined;
          });
        };
        for (const [i, words] of ["first words", "second words"].entries()) {
          const end = await turn(parent, words, i + 1);
          assert(end.stopReason === "end_turn", `${words}: stopReason ${end.stopReason}`);
        }
        const fork = cx.request(v2.methods.agent.session.fork, { sessionId: parent, cwd: workspace });
        if (!FORKS) {
          assert(advertised === undefined, `fork advertised on ${release}`);
          const refused = await refusal(fork, "session/fork");
          note(`session/fork: ${refused.code} ${refused.message}`);
          assert(refused.code === METHOD_NOT_FOUND, `code ${refused.code}`);
          return `${release}: not advertised, refused ${refused.code}`;
        }
        assert(advertised !== undefined && advertised !== null, `fork not advertised on ${release}`);
        const parentUpdates = updatesOf(agent.frames, parent).length;
        const forked = await guard(fork, SESSION_NEW_MS, "session/fork");
        const child = forked.sessionId;
        assert(typeof child === "string" && child !== parent, `the fork's sessionId ${child}`);
        const before = beforeAnswer(agent.frames, child);
        const kinds = before.map((u) => u.sessionUpdate);
        note(`fork ${child}: before the answer: ${summary(before)}`);
        const marker = kinds.indexOf("replay_complete");
        assert(marker >= 0 && kinds.lastIndexOf("replay_complete") === marker, `one replay_complete: ${kinds}`);
        const history = before.slice(0, marker);
        const users = history.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content?.text);
        assert(JSON.stringify(users) === JSON.stringify(["first words", "second words"]), `user messages ${users}`);
        assert(textOf(history, "agent_message_chunk").includes("You said: second words"), "the answers were not replayed");
        assert(before[marker + 1]?.sessionUpdate === "state_update" && before[marker + 1].state === "idle", "no idle state after the marker");
        const end = await turn(child, "third words", 1);
        assert(end.stopReason === "end_turn", `the fork's prompt: stopReason ${end.stopReason}`);
        assert(updatesOf(agent.frames, parent).length === parentUpdates, "the parent saw updates of the fork");
        return `${history.length} updates replayed, replay_complete, idle, then the answer; the fork's prompt end_turn`;
      });
    });
  } catch (error) {
    crash = error instanceof Error ? error.message : String(error);
  }
  await stop(agent);
}
await schemaCheck("v2: every frame matches schema/v2/schema.unstable.json", v2Schema, forkFrames);

process.exit(checks.finish(crash ? `client stopped: ${crash}` : "not reached"));
