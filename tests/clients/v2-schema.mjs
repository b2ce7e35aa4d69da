// Validation of every frame an agent writes against an ACP JSON Schema shipped in the
// TypeScript SDK package (`schema/v2/schema.json` by default; `schema/v1/schema.unstable.json`
// and `schema/v2/schema.unstable.json` for methods only the unstable schemas define, such as
// `session/fork`), with Ajv (draft 2020-12).
//
// A frame must be an agent message (request, response or notification) or a protocol-level
// one (`$/cancel_request`), and — since the root schema also admits any extension message —
// its params must match the type the schema gives its method (`x-method`, handled on the
// client's side), and a response the type of the request it answers (`{"messageId": …}` is
// checked as a `PromptResponse`, not as any result). A method the schema does not define is
// a problem too: zcode-acp sends no extension messages. The requests the client sends are
// checked against the types the schema gives them too (`sentProblems`), so a fork request is
// known to be the schema's own, not only what the agent accepts.

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { StringDecoder } from "node:string_decoder";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const SCHEMA_ID = "acp";

/** Integer and float formats the schema uses (ajv-formats covers uri, date-time, regex). */
const NUMBER_FORMATS = {
  int32: (n) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31,
  uint16: (n) => Number.isInteger(n) && n >= 0 && n < 2 ** 16,
  uint32: (n) => Number.isInteger(n) && n >= 0 && n < 2 ** 32,
  int64: (n) => Number.isInteger(n),
  uint64: (n) => Number.isInteger(n) && n >= 0,
  double: (n) => typeof n === "number",
};

/** Update kinds newer than the schema that zcode-acp sends (ACP v2 Preview, schema ≥ 1.18). */
const OPEN_KINDS_SENT = new Set(["replay_complete"]);

/** `file` is a path under the SDK's `schema/` folder, e.g. `v1/schema.unstable.json`. */
export function loadSchema(file = "v2/schema.json") {
  // Read from the installed package (its `schema/*.json` exports are JSON, not modules).
  const path = fileURLToPath(
    new URL(`./node_modules/@agentclientprotocol/sdk/schema/${file}`, import.meta.url),
  );
  return { path, schema: JSON.parse(readFileSync(path, "utf8")) };
}

/**
 * A checker for one connection: `sent(line)` for each line the client writes (to know what a
 * response answers), `received(line)` for each line the agent writes. `problems` lists every
 * frame that broke the schema; `counts` how many frames of each kind were checked.
 */
export class FrameChecker {
  constructor(file = "v2/schema.json") {
    const { path, schema } = loadSchema(file);
    this.file = file;
    this.schemaPath = path;
    const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
    addFormats(ajv);
    for (const [name, validate] of Object.entries(NUMBER_FORMATS)) {
      ajv.addFormat(name, { type: "number", validate });
    }
    ajv.addSchema(schema, SCHEMA_ID);
    const anyOf = schema.anyOf.map((branch) => branch.title);
    const agent = anyOf.indexOf("Agent");
    const protocol = anyOf.indexOf("ProtocolLevel");
    if (agent < 0 || protocol < 0) throw new Error(`unexpected schema root: ${anyOf}`);
    this.frame = ajv.compile({
      anyOf: [{ $ref: `${SCHEMA_ID}#/anyOf/${agent}` }, { $ref: `${SCHEMA_ID}#/anyOf/${protocol}` }],
    });
    // Per method: the type of what the agent sends (handled by the client or the protocol),
    // and of the agent's answers (handled by the agent).
    const ref = (name) => ajv.compile({ $ref: `${SCHEMA_ID}#/$defs/${name}` });
    this.outgoing = new Map();
    this.responses = new Map();
    this.requests = new Map();
    for (const [name, def] of Object.entries(schema.$defs)) {
      const method = def["x-method"];
      if (!method) continue;
      if (def["x-side"] === "agent" && name.endsWith("Response")) {
        this.responses.set(method, ref(name));
      } else if (def["x-side"] === "agent" && name.endsWith("Request")) {
        this.requests.set(method, ref(name));
      } else if (["client", "protocol"].includes(def["x-side"]) && !name.endsWith("Response")) {
        this.outgoing.set(method, ref(name));
      }
    }
    this.error = ref("Error");
    // The update kinds the schema names; any other passes its open `other` variant, so the
    // one zcode-acp sends on purpose (`replay_complete`, newer than this schema) is listed.
    this.updateKinds = new Set(
      (schema.$defs.SessionUpdate.anyOf ?? schema.$defs.SessionUpdate.oneOf).map((v) => v.properties?.sessionUpdate?.const).filter(Boolean),
    );
    this.pending = new Map();
    this.problems = [];
    this.sentProblems = [];
    this.counts = { frames: 0, responses: 0, notifications: 0, requests: 0, sent: 0 };
    /** How many frames of each method (requests sent, and the answers to them) passed. */
    this.valid = new Map();
  }

  #passed(what) {
    this.valid.set(what, (this.valid.get(what) ?? 0) + 1);
  }

  /**
   * Proves the checker can fail: a v1-shaped chunk (no `messageId`) and a v1 prompt answer
   * (`stopReason`) are refused, their v2 forms accepted. Returns what went wrong, if anything.
   */
  selfTest() {
    const update = (u) => ({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update: u } });
    const chunk = { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "x" } };
    const probe = new FrameChecker(this.file);
    probe.pending.set("1", "session/prompt");
    probe.pending.set("2", "session/prompt");
    const wrong = [];
    if (!probe.check(update(chunk))) wrong.push("accepted a chunk without messageId");
    if (probe.check(update({ ...chunk, messageId: "m" }))) wrong.push("refused a v2 chunk");
    if (!probe.check(update({ sessionUpdate: "tool_call", toolCallId: "t", title: "x" }))) {
      wrong.push("accepted v1's tool_call");
    }
    if (!probe.check(update({ sessionUpdate: "tool_call_update", title: "no id" }))) {
      wrong.push("accepted a tool call update without toolCallId");
    }
    if (!probe.check({ jsonrpc: "2.0", id: 1, result: { stopReason: "end_turn" } })) {
      wrong.push("accepted a v1 prompt answer");
    }
    if (probe.check({ jsonrpc: "2.0", id: 2, result: { messageId: "m" } })) wrong.push("refused a v2 prompt answer");
    if (!probe.check({ jsonrpc: "2.0", method: "fs/read_text_file", id: 3, params: {} })) {
      wrong.push("accepted a v1-only client request");
    }
    return wrong;
  }

  /**
   * Proves the checker can fail on fork frames (for a schema that defines `session/fork`): a
   * fork request without `cwd`, a fork answer without `sessionId` and a replayed update
   * without `sessionId` are refused, their whole forms accepted. Returns what went wrong.
   */
  forkSelfTest() {
    const probe = new FrameChecker(this.file);
    const wrong = [];
    const request = { jsonrpc: "2.0", id: 1, method: "session/fork", params: { sessionId: "s", cwd: "/w", mcpServers: [] } };
    if (probe.checkSent(request)) wrong.push(`refused a fork request: ${probe.checkSent(request)}`);
    const { cwd: _, ...noCwd } = request.params;
    if (!probe.checkSent({ ...request, params: noCwd })) wrong.push("accepted a fork request without cwd");
    probe.pending.set("1", "session/fork");
    probe.pending.set("2", "session/fork");
    if (probe.check({ jsonrpc: "2.0", id: 1, result: { sessionId: "f" } })) wrong.push("refused a fork answer");
    if (!probe.check({ jsonrpc: "2.0", id: 2, result: { configOptions: [] } })) {
      wrong.push("accepted a fork answer without sessionId");
    }
    const text = { type: "text", text: "x" };
    const chunk = { sessionUpdate: "user_message_chunk", content: text, messageId: "m" };
    if (!probe.check({ jsonrpc: "2.0", method: "session/update", params: { update: chunk } })) {
      wrong.push("accepted an update without sessionId");
    }
    return wrong;
  }

  sent(line) {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      return;
    }
    if (message && message.method !== undefined && message.id !== undefined) {
      this.pending.set(JSON.stringify(message.id), message.method);
      const problem = this.checkSent(message);
      if (problem) this.sentProblems.push(`request ${message.method}: ${problem} in ${line.slice(0, 300)}`);
    }
  }

  /** What is wrong with one request the client sends, or nothing. */
  checkSent(message) {
    this.counts.sent += 1;
    const validate = this.requests.get(message.method);
    if (!validate) return `a method ${this.file} does not define`;
    if (!validate(message.params)) return summarize(validate.errors);
    this.#passed(`request ${message.method}`);
    return null;
  }

  received(line) {
    this.counts.frames += 1;
    let message;
    try {
      message = JSON.parse(line);
    } catch (error) {
      this.problems.push(`not JSON: ${line.slice(0, 200)}`);
      return;
    }
    const problem = this.check(message);
    if (problem) this.problems.push(`${describe(message)}: ${problem} in ${line.slice(0, 300)}`);
  }

  /** What is wrong with one agent frame, or nothing. */
  check(message) {
    if (!this.frame(message)) return summarize(this.frame.errors);
    if (message.method === undefined) {
      this.counts.responses += 1;
      const method = this.pending.get(JSON.stringify(message.id));
      this.pending.delete(JSON.stringify(message.id));
      if ("error" in message) return this.error(message.error) ? null : summarize(this.error.errors);
      const validate = this.responses.get(method);
      if (!validate) return `an answer to ${method ?? "no request of the client"}`;
      if (!validate(message.result)) return summarize(validate.errors);
      this.#passed(`response ${method}`);
      return null;
    }
    this.counts[message.id === undefined ? "notifications" : "requests"] += 1;
    const validate = this.outgoing.get(message.method);
    if (!validate) return `a method ${this.file} does not define`;
    if (!validate(message.params)) return summarize(validate.errors);
    const kind = message.method === "session/update" ? message.params.update.sessionUpdate : null;
    if (kind && !this.updateKinds.has(kind) && !OPEN_KINDS_SENT.has(kind)) {
      return `an update kind ${this.file} does not name: ${kind}`;
    }
    this.#passed(`${message.id === undefined ? "notification" : "request"} ${message.method}`);
    return null;
  }
}

/** The checker `ts-v2-client.mjs` uses: the stable v2 schema. */
export class V2FrameChecker extends FrameChecker {
  constructor() {
    super("v2/schema.json");
  }
}

function describe(message) {
  if (message?.method) return message.id === undefined ? `notification ${message.method}` : `request ${message.method}`;
  return `response ${JSON.stringify(message?.id)}`;
}

function summarize(errors) {
  return (errors ?? [])
    .slice(0, 3)
    .map((e) => `${e.instancePath || "/"} ${e.message}`)
    .join("; ");
}

/** Splits a byte stream into lines, calling `onLine` for each complete one. */
export function lineSplitter(onLine) {
  let buffered = "";
  const decoder = new StringDecoder("utf8");
  return (chunk) => {
    buffered += decoder.write(chunk);
    let newline;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, newline).replace(/\r$/, "");
      buffered = buffered.slice(newline + 1);
      if (line.length > 0) onLine(line);
    }
  };
}
