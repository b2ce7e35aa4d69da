// Start-up failures: bad configuration or a host that cannot load ends the bridge with exit 1
// and a message on stderr, and nothing on stdout.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ARTIFACT, Bridge, PROTOCOL, bridgeEnv, fakeHostFile, sha256 } from './harness.mjs';

async function assertStartupFailure(t, env, message) {
  const bridge = Bridge.start(t, { env });
  const { code, signal } = await bridge.exit();
  assert.deepEqual({ code, signal }, { code: 1, signal: null }, bridge.stderr);
  assert.ok(
    bridge.stderr.includes(message),
    `stderr lacks ${JSON.stringify(message)}:\n${bridge.stderr}`,
  );
  assert.deepEqual([bridge.frames, bridge.nonJsonLines], [[], []], 'stdout must stay empty');
}

const REQUIRED_VARIABLES = [
  'ZCODE_ACP_HOST_INDEX',
  'ZCODE_ACP_HOST_RPC_MODULE',
  'ZCODE_ACP_HOST_ARTIFACT',
  'ZCODE_ACP_HOST_PROTOCOL',
];

for (const variable of REQUIRED_VARIABLES) {
  test(`missing ${variable} exits 1 with the message`, async (t) => {
    await assertStartupFailure(
      t,
      bridgeEnv({ [variable]: undefined }),
      'Missing ZCode host artifact or protocol',
    );
  });
}

test('an empty variable counts as missing', async (t) => {
  await assertStartupFailure(
    t,
    bridgeEnv({ ZCODE_ACP_HOST_PROTOCOL: '' }),
    'Missing ZCode host artifact or protocol',
  );
});

test('artifact or protocol that is not JSON exits 1', async (t) => {
  await assertStartupFailure(
    t,
    bridgeEnv({ ZCODE_ACP_HOST_ARTIFACT: '{id:' }),
    'ZCODE_ACP_HOST_ARTIFACT is not valid JSON',
  );
  await assertStartupFailure(
    t,
    bridgeEnv({ ZCODE_ACP_HOST_PROTOCOL: '[]' }),
    'ZCODE_ACP_HOST_PROTOCOL must be a JSON object',
  );
});

test('protocol without an agent channel exits 1', async (t) => {
  const protocol = { ...PROTOCOL, serviceChannels: { task: 'zcode-task' } };
  await assertStartupFailure(
    t,
    bridgeEnv({ ZCODE_ACP_HOST_PROTOCOL: JSON.stringify(protocol) }),
    'Invalid ZCode host protocol: serviceChannels',
  );
});

test('an operation on an unknown service exits 1', async (t) => {
  const protocol = {
    ...PROTOCOL,
    operations: {
      cancelGeneration: {
        method: 'stopGeneration',
        service: 'session',
        sessionParameter: 'taskId',
      },
    },
  };
  await assertStartupFailure(
    t,
    bridgeEnv({ ZCODE_ACP_HOST_PROTOCOL: JSON.stringify(protocol) }),
    'Invalid ZCode host protocol: operation cancelGeneration',
  );
});

test('the artifact names the RPC exports; a missing export exits 1', async (t) => {
  const artifact = { ...ARTIFACT, rpcExports: { protocol: 'g', client: 'i', service: 'x' } };
  await assertStartupFailure(
    t,
    bridgeEnv({ ZCODE_ACP_HOST_ARTIFACT: JSON.stringify(artifact) }),
    'ZCode host RPC module does not export the expected protocol, client and service factory',
  );
});

test('a host index that cannot be read exits 1 before anything starts', async (t) => {
  await assertStartupFailure(
    t,
    bridgeEnv({ ZCODE_ACP_HOST_INDEX: fakeHostFile('missing-index.js') }),
    'Cannot read the ZCode host index',
  );
});

test('a host index that fails to load fails the worker: exit 1', async (t) => {
  const index = path.join(mkdtempSync(path.join(tmpdir(), 'zcode-broken-host-')), 'index.mjs');
  writeFileSync(index, 'export const broken = ;\n');
  const artifact = { ...ARTIFACT, hostIndexSha256: sha256(index) };
  await assertStartupFailure(
    t,
    bridgeEnv({ ZCODE_ACP_HOST_INDEX: index, ZCODE_ACP_HOST_ARTIFACT: JSON.stringify(artifact) }),
    'ZCode host worker failed: ',
  );
});

// The core verified the files; one changed since (or a descriptor for other files) is never run.
for (const [file, key, what] of [
  ['index.js', 'hostIndexSha256', 'host index'],
  ['chunk-KGXW6KHC.js', 'hostRpcModuleSha256', 'host RPC module'],
]) {
  test(`a ${what} whose hash differs from the descriptor's is not imported`, async (t) => {
    const artifact = { ...ARTIFACT, [key]: '0'.repeat(64) };
    await assertStartupFailure(
      t,
      bridgeEnv({ ZCODE_ACP_HOST_ARTIFACT: JSON.stringify(artifact) }),
      `ZCode ${what} hash does not match the release descriptor`,
    );
    assert.notEqual(sha256(fakeHostFile(file)), '0'.repeat(64));
  });

  test(`a descriptor without ${key} exits 1`, async (t) => {
    const artifact = { ...ARTIFACT, [key]: undefined };
    await assertStartupFailure(
      t,
      bridgeEnv({ ZCODE_ACP_HOST_ARTIFACT: JSON.stringify(artifact) }),
      `Invalid ZCode host artifact: ${key} must be a lowercase hex SHA-256`,
    );
  });
}

test('descriptors of another protocol generation exit 1', async (t) => {
  await assertStartupFailure(
    t,
    bridgeEnv({ ZCODE_ACP_HOST_PROTOCOL: JSON.stringify({ ...PROTOCOL, id: 'zcode-task-v2' }) }),
    'ZCode host protocol is for zcode-task-v2, this bridge for zcode-task-v1',
  );
  await assertStartupFailure(
    t,
    bridgeEnv({ ZCODE_ACP_HOST_ARTIFACT: JSON.stringify({ ...ARTIFACT, protocolId: 'x' }) }),
    'ZCode host artifact is for x, this bridge for zcode-task-v1',
  );
});
