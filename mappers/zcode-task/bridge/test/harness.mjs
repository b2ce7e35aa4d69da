// Test harness: runs a generation's bridge script the way the core does (`<runtime> -e <text>`,
// ELECTRON_RUN_AS_NODE=1, the ZCODE_ACP_HOST_* variables), with plain `node` playing ZCode's
// Electron runtime and the fake official host files from tests/fixtures. The script is built as
// the mappers build it (`zcode_task::bridge::script`): the release part, a newline, the core.

import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';

const here = path.dirname(fileURLToPath(import.meta.url));
const mappers = path.resolve(here, '..', '..', '..');
export const repoRoot = path.resolve(mappers, '..');
const core = readFileSync(path.join(mappers, 'zcode-task/bridge/core.js'), 'utf8');
const fakeHostDir = path.join(repoRoot, 'tests/fixtures/fake-zcode-host/out/host');

/** The script of a generation (`zcode-task-v1`, `zcode-task-v2`). */
export function bridgeSource(generation) {
  const release = readFileSync(path.join(mappers, generation, 'bridge/release.js'), 'utf8');
  return `${release}\n${core}`;
}

export function sha256(file) {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/** Generous: only stops a broken run from hanging CI, never measures speed. */
export const HANG_GUARD_MS = 20_000;

export const PROTOCOL = {
  id: 'zcode-task-v1',
  serviceChannels: { agent: 'zcode-agent', task: 'zcode-task' },
  operations: {
    cancelGeneration: { method: 'stopGeneration', service: 'task', sessionParameter: 'taskId' },
    respondStructuredInput: {
      method: 'respondElicitation',
      service: 'task',
      sessionParameter: 'taskId',
    },
    respondPermission: { method: 'respondPermission', service: 'task', sessionParameter: 'taskId' },
  },
};

export const ARTIFACT = {
  id: 'zcode-host-3.11.2',
  appVersion: '3.11.2',
  cliVersion: '0.16.5',
  protocolId: 'zcode-task-v1',
  hostIndexRelativePath: 'out/host/index.js',
  hostRpcModuleRelativePath: 'out/host/chunk-KGXW6KHC.js',
  hostIndexSha256: sha256(path.join(fakeHostDir, 'index.js')),
  hostRpcModuleSha256: sha256(path.join(fakeHostDir, 'chunk-KGXW6KHC.js')),
  rpcExports: { protocol: 'g', client: 'i', service: 'j' },
};

/** What the bridge must answer to every well-formed browser-execute request. */
export const BROWSER_UNAVAILABLE = {
  ok: false,
  error: {
    code: 'backend_unavailable',
    message: 'Browser control is unavailable in zcode-acp headless mode',
    sideEffect: 'none',
  },
  elapsedMs: 0,
};

export const WORKSPACE = '/workspace/project';

/** The bridge's environment; `overrides` values of `undefined` remove a variable. */
export function bridgeEnv(overrides = {}) {
  const env = {
    ...process.env,
    ELECTRON_RUN_AS_NODE: '1',
    ZCODE_ACP_HOST_INDEX: path.join(fakeHostDir, 'index.js'),
    ZCODE_ACP_HOST_RPC_MODULE: path.join(fakeHostDir, 'chunk-KGXW6KHC.js'),
    ZCODE_ACP_HOST_ARTIFACT: JSON.stringify(ARTIFACT),
    ZCODE_ACP_HOST_PROTOCOL: JSON.stringify(PROTOCOL),
    ...overrides,
  };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete env[key];
  return env;
}

export function fakeHostFile(name) {
  return path.join(fakeHostDir, name);
}

/** One bridge child process and everything it wrote. */
export class Bridge {
  frames = [];
  nonJsonLines = [];
  stderr = '';
  sentIds = new Set();
  #nextId = 1;
  #waiters = new Set();
  #closed = false;

  /**
   * Starts the bridge of `generation` in `cwd` (by default a fresh directory: the stand-in
   * install root), stopped after the test.
   */
  static start(t, { env = bridgeEnv(), generation = 'zcode-task-v1', cwd } = {}) {
    cwd ??= realpathSync(mkdtempSync(path.join(tmpdir(), 'zcode-bridge-')));
    const bridge = new Bridge(env, cwd, bridgeSource(generation));
    t.after(() => bridge.kill());
    return bridge;
  }

  constructor(env, cwd, source) {
    this.cwd = cwd;
    this.child = spawn(process.execPath, ['-e', source], {
      cwd,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    // Writes after the bridge exited must not crash the test run.
    this.child.stdin.on('error', () => {});
    this.child.stderr.setEncoding('utf8').on('data', (text) => {
      this.stderr += text;
    });
    readline
      .createInterface({ input: this.child.stdout, crlfDelay: Infinity })
      .on('line', (line) => this.#receive(line));
    // `close` rather than `exit`: by then every stdout line has been read.
    this.exited = new Promise((resolve) => {
      this.child.on('close', (code, signal) => {
        this.#closed = true;
        resolve({ code, signal });
        this.#notify();
      });
    });
  }

  sendLine(text) {
    this.child.stdin.write(`${text}\n`);
  }

  /** Sends one request; `id` defaults to the next integer. Resolves with its response frame. */
  request(method, params, id = this.#nextId++) {
    this.sentIds.add(id);
    this.sendLine(JSON.stringify({ id, method, params }));
    return this.response(id);
  }

  call(service, method, params) {
    return this.request('__call', { service, method, params });
  }

  /** The `result` of a `__call`; fails the test on an error frame. */
  async callOk(service, method, params) {
    const frame = await this.call(service, method, params);
    assert.ok('result' in frame, `${service}.${method} failed: ${JSON.stringify(frame)}`);
    return frame.result;
  }

  hostReport() {
    return this.callOk('agent', 'readSessionEvents', { fakeControl: { report: true } });
  }

  response(id) {
    return this.waitFor(
      (frame) => frame.id === id && !('method' in frame),
      `response ${JSON.stringify(id)}`,
    );
  }

  events(subscriptionId, from = 0) {
    return this.frames
      .slice(from)
      .filter((frame) => frame.method === 'event' && frame.params.subscriptionId === subscriptionId)
      .map((frame) => frame.params.event);
  }

  waitForEvent(subscriptionId, predicate, what) {
    return this.waitFor(
      (frame) =>
        frame.method === 'event' &&
        frame.params.subscriptionId === subscriptionId &&
        predicate(frame.params.event),
      what,
    ).then((frame) => frame.params.event);
  }

  /** Resolves with the first frame (seen so far or later) matching `predicate`. */
  waitFor(predicate, what) {
    return new Promise((resolve, reject) => {
      let timer;
      const finish = (settle) => {
        clearTimeout(timer);
        this.#waiters.delete(check);
        settle();
      };
      const check = () => {
        const frame = this.frames.find(predicate);
        if (frame) finish(() => resolve(frame));
        else if (this.#closed)
          finish(() => reject(new Error(`bridge exited before ${what}; stderr:\n${this.stderr}`)));
      };
      timer = setTimeout(
        () =>
          finish(() => reject(new Error(`timed out waiting for ${what}; stderr:\n${this.stderr}`))),
        HANG_GUARD_MS,
      );
      this.#waiters.add(check);
      check();
    });
  }

  /** Closes stdin (as the adapter does) and resolves with how the bridge exited. */
  closeStdin() {
    this.child.stdin.end();
    return this.exit();
  }

  exit() {
    return withHangGuard(this.exited, () => `bridge exit; stderr:\n${this.stderr}`);
  }

  kill() {
    if (!this.#closed) this.child.kill('SIGKILL');
  }

  /** Every stdout line must be a frame of the bridge envelope answering something we sent. */
  assertCleanStdout() {
    assert.deepEqual(this.nonJsonLines, [], 'stdout carried lines that are not JSON');
    for (const frame of this.frames) assertEnvelopeFrame(frame, this.sentIds);
  }

  #receive(line) {
    try {
      this.frames.push(JSON.parse(line));
    } catch {
      this.nonJsonLines.push(line);
    }
    this.#notify();
  }

  #notify() {
    for (const waiter of [...this.#waiters]) waiter();
  }
}

/** `describe` is called only on timeout, so it can report the latest state. */
export function withHangGuard(promise, describe) {
  let timer;
  const guard = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`timed out waiting for ${describe()}`)),
      HANG_GUARD_MS,
    );
  });
  return Promise.race([promise, guard]).finally(() => clearTimeout(timer));
}

function assertEnvelopeFrame(frame, sentIds) {
  const text = JSON.stringify(frame);
  assert.ok(
    typeof frame === 'object' && frame !== null && !Array.isArray(frame),
    `not an object: ${text}`,
  );
  const keys = Object.keys(frame).sort().join(',');
  if (keys === 'method,params') {
    assert.equal(frame.method, 'event', text);
    assert.deepEqual(Object.keys(frame.params).sort(), ['event', 'subscriptionId'], text);
    assert.equal(typeof frame.params.subscriptionId, 'string', text);
    return;
  }
  if (keys === 'id,result') {
    assert.ok(sentIds.has(frame.id), `response to an id never sent: ${text}`);
    return;
  }
  assert.equal(keys, 'error,id', `unknown frame shape: ${text}`);
  assert.deepEqual(Object.keys(frame.error).sort(), ['code', 'message'], text);
  assert.ok(Number.isInteger(frame.error.code), text);
  assert.ok(typeof frame.error.message === 'string' && frame.error.message !== '', text);
  if (frame.id === null) assert.equal(frame.error.code, -32700, text);
  else assert.ok(sentIds.has(frame.id), `response to an id never sent: ${text}`);
}
