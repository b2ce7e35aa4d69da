// The zcode-task-v2 release part (ZCode 3.12.3) with the shared core, under plain Node playing
// ZCode's Electron runtime, against the fake 3.12 host in ./fixtures: what differs from 3.11.2
// (whose behaviour the other files here cover).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Bridge as Harness, repoRoot, sha256 } from './harness.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const API_KEY = 'fake-3.12-api-key';

const PROTOCOL = {
  id: 'zcode-task-v2',
  serviceChannels: { agent: 'zcode-agent', task: 'zcode-task', modelSelection: 'model-selection' },
  operations: {
    cancelGeneration: { method: 'stopGeneration', service: 'task', sessionParameter: 'taskId' },
  },
};

/** A stand-in install root: the fake host and the RPC chunk, and the provider config. */
function install(t) {
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'zcode-bridge-3-12-')));
  const host = path.join(root, 'resources/app.asar/out/host');
  mkdirSync(host, { recursive: true });
  copyFileSync(path.join(here, 'fixtures', 'fake-host-3.12.mjs'), path.join(host, 'index.js'));
  copyFileSync(
    path.join(repoRoot, 'tests/fixtures/fake-zcode-host/out/host/chunk-KGXW6KHC.js'),
    path.join(host, 'chunk-KGXW6KHC.js'),
  );
  writeFileSync(path.join(root, 'resources/app.asar/package.json'), '{"type":"module"}');
  const config = path.join(root, 'resources/config/provider/zcode-builtin.json');
  mkdirSync(path.dirname(config), { recursive: true });
  writeFileSync(config, '{"revision": 1}');
  return { root, host, config };
}

function env(paths, overrides = {}) {
  const artifact = {
    id: 'zcode-sim-3.12.3',
    protocolId: 'zcode-task-v2',
    hostIndexSha256: sha256(path.join(paths.host, 'index.js')),
    hostRpcModuleSha256: sha256(path.join(paths.host, 'chunk-KGXW6KHC.js')),
    rpcExports: { protocol: 'g', client: 'i', service: 'j' },
  };
  const variables = {
    ...process.env,
    ELECTRON_RUN_AS_NODE: '1',
    ZCODE_ACP_HOST_INDEX: path.join(paths.host, 'index.js'),
    ZCODE_ACP_HOST_RPC_MODULE: path.join(paths.host, 'chunk-KGXW6KHC.js'),
    ZCODE_ACP_HOST_ARTIFACT: JSON.stringify(artifact),
    ZCODE_ACP_HOST_PROTOCOL: JSON.stringify(PROTOCOL),
    ZCODE_ACP_HOST_PROVIDER_CONFIG: paths.config,
    ...overrides,
  };
  for (const [key, value] of Object.entries(variables)) if (value === undefined) delete variables[key];
  return variables;
}

/** The 3.12 bridge in the stand-in install; `call` answers with the frame and its raw line. */
class Bridge {
  constructor(t, paths, overrides) {
    this.harness = Harness.start(t, {
      env: env(paths, overrides),
      generation: 'zcode-task-v2',
      cwd: paths.root,
    });
    this.nextId = 1;
  }

  async call(id, service, method, params = {}) {
    const frame = await this.harness.request('__call', { service, method, params }, id);
    return { line: JSON.stringify(frame), frame };
  }

  get stderr() {
    return this.harness.stderr;
  }

  get lines() {
    return [...this.harness.frames, ...this.harness.nonJsonLines];
  }

  get exited() {
    return this.harness.exit().then(({ code }) => code);
  }
}

test('init-local carries the built-in provider config path', async (t) => {
  const paths = install(t);
  const bridge = new Bridge(t, paths);
  const { frame } = await bridge.call(1, 'agent', 'initialize', { workspacePath: paths.root });
  assert.deepEqual(frame.result.initLocal, {
    type: 'init-local',
    deviceMid: 'zcode-acp-headless',
    agentSpawnFallbackCwd: paths.root,
    zcodeBuiltinProviderConfigFilePath: paths.config,
  });
});

test('getView leaves the bridge projected: ids, names, levels, the resolution; no credentials', async (t) => {
  const paths = install(t);
  const bridge = new Bridge(t, paths);
  const { line, frame } = await bridge.call(1, 'modelSelection', 'getView', {});
  assert.ok(!line.includes(API_KEY), `credentials leaked: ${line}`);
  assert.deepEqual(frame.result, {
    revision: 2,
    models: [
      { ref: { providerId: 'builtin:zai-coding-plan', modelId: 'GLM-5.2' }, label: 'GLM-5.2', reasoningLevels: ['low', 'medium', 'high'], providerLabel: 'Z.ai - Coding Plan' },
      { ref: { providerId: 'builtin:zai-coding-plan', modelId: 'GLM-4.7' }, label: 'GLM-4.7', reasoningLevels: ['low', 'high'], providerLabel: 'Z.ai - Coding Plan' },
    ],
    preferredSelection: { providerId: 'builtin:zai-coding-plan', modelId: 'GLM-5.2', options: { reasoningLevel: 'high' } },
  });
  const selection = { providerId: 'builtin:zai-coding-plan', modelId: 'GLM-4.7', options: { reasoningLevel: 'low' } };
  const resolved = await bridge.call(2, 'modelSelection', 'getView', { selection });
  assert.ok(!resolved.line.includes(API_KEY), resolved.line);
  assert.deepEqual(resolved.frame.result.effectiveSelection, selection);
  const unknown = await bridge.call(3, 'modelSelection', 'getView', { selection: { providerId: 'x', modelId: 'y' } });
  assert.ok(!unknown.line.includes(API_KEY), unknown.line);
  assert.equal(unknown.frame.result.selectionIssue, 'model_not_found');
  const broken = await bridge.call(4, 'modelSelection', 'getView', { broken: true });
  assert.deepEqual(broken.frame.error, { code: -32000, message: 'ZCode model selection view has an unexpected shape' });
});

test('readWorkspaceState and other model-selection methods are not allowlisted', async (t) => {
  const paths = install(t);
  const bridge = new Bridge(t, paths);
  const state = await bridge.call(1, 'agent', 'readWorkspaceState', { workspacePath: paths.root });
  assert.equal(state.frame.error.message, 'Unsupported native bridge method: agent:readWorkspaceState');
  const other = await bridge.call(2, 'modelSelection', 'setSelection', {});
  assert.equal(other.frame.error.message, 'Unsupported native bridge method: modelSelection:setSelection');
  const presentation = await bridge.call(3, 'agent', 'readWorkspacePresentation', { workspacePath: paths.root });
  assert.deepEqual(presentation.frame.result, { workspace: { workspacePath: paths.root }, mode: 'build' });
});

for (const [name, overrides, message] of [
  ['without the provider config', { ZCODE_ACP_HOST_PROVIDER_CONFIG: undefined }, 'Missing ZCode built-in provider config (ZCODE_ACP_HOST_PROVIDER_CONFIG)'],
  ['with a provider config that is not a file', { ZCODE_ACP_HOST_PROVIDER_CONFIG: '/nonexistent/zcode-builtin.json' }, 'ZCode built-in provider config is not a file: /nonexistent/zcode-builtin.json'],
  ['without the model-selection channel', { ZCODE_ACP_HOST_PROTOCOL: JSON.stringify({ ...PROTOCOL, serviceChannels: { agent: 'zcode-agent', task: 'zcode-task' } }) }, 'including agent and modelSelection'],
]) {
  test(`refuses to start ${name}`, async (t) => {
    const bridge = new Bridge(t, install(t), overrides);
    assert.equal(await bridge.exited, 1);
    assert.ok(bridge.stderr.includes(message), bridge.stderr);
    assert.deepEqual(bridge.lines, [], 'stdout stays empty');
  });
}
