// Start-up failures: bad configuration or a host that cannot load ends the bridge with exit 1
// and a message on stderr, and nothing on stdout.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ARTIFACT, Bridge, PROTOCOL, bridgeEnv, fakeHostFile } from './harness.mjs';

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

test('a host index that cannot be loaded fails the worker: exit 1', async (t) => {
  await assertStartupFailure(
    t,
    bridgeEnv({ ZCODE_ACP_HOST_INDEX: fakeHostFile('missing-index.js') }),
    'ZCode host worker failed: ',
  );
});
