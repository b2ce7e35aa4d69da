// Shutdown and host failure: stdin close, SIGTERM and SIGINT end the bridge with exit 0 after
// telling the host to dispose; a failed or exited host worker ends it with a failure code.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Bridge, WORKSPACE, bridgeEnv } from './harness.mjs';

/** A bridge whose fake host writes its report to a file when it receives `dispose`. */
async function startWithDisposeMarker(t) {
  const marker = path.join(
    mkdtempSync(path.join(tmpdir(), 'zcode-bridge-marker-')),
    'dispose.json',
  );
  const bridge = Bridge.start(t, { env: bridgeEnv({ FAKE_ZCODE_HOST_DISPOSE_MARKER: marker }) });
  const { session } = await bridge.callOk('agent', 'createSession', { workspacePath: WORKSPACE });
  await bridge.request('__subscribe', {
    subscriptionId: 'sub-1',
    target: { workspacePath: WORKSPACE, sessionId: session.sessionId, includeSnapshot: true },
  });
  return { bridge, marker };
}

function disposeMessagesSeenByHost(marker) {
  assert.ok(existsSync(marker), 'the host never received dispose');
  return JSON.parse(readFileSync(marker, 'utf8')).disposeMessages;
}

test('stdin close disposes the host and exits 0', async (t) => {
  const { bridge, marker } = await startWithDisposeMarker(t);
  assert.deepEqual(await bridge.closeStdin(), { code: 0, signal: null });
  assert.equal(disposeMessagesSeenByHost(marker), 1);
  bridge.assertCleanStdout();
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  test(`${signal} disposes the host and exits 0`, async (t) => {
    const { bridge, marker } = await startWithDisposeMarker(t);
    bridge.child.kill(signal);
    assert.deepEqual(await bridge.exit(), { code: 0, signal: null });
    assert.equal(disposeMessagesSeenByHost(marker), 1);
  });
}

test('a host that ignores dispose cannot keep the bridge alive', async (t) => {
  const { bridge, marker } = await startWithDisposeMarker(t);
  await bridge.callOk('agent', 'initialize', {
    workspacePath: WORKSPACE,
    fakeControl: { ignoreDispose: true },
  });
  assert.deepEqual(await bridge.closeStdin(), { code: 0, signal: null });
  assert.equal(disposeMessagesSeenByHost(marker), 1);
});

test('a call the host never answers does not block shutdown', async (t) => {
  const bridge = Bridge.start(t);
  const pending = bridge.call('agent', 'listSessions', {
    workspacePath: WORKSPACE,
    fakeControl: { waitGate: 'never' },
  });
  pending.catch(() => {});
  // Make sure the held call reached the host before closing.
  await bridge.callOk('agent', 'initialize', { workspacePath: WORKSPACE });
  assert.deepEqual(await bridge.closeStdin(), { code: 0, signal: null });
  assert.ok(!bridge.frames.some((frame) => frame.id === 1), 'the held call was never answered');
});

test('an unexpected worker exit ends the bridge with the same code', async (t) => {
  const bridge = Bridge.start(t);
  bridge.call('agent', 'initialize', { fakeControl: { exitWorker: 3 } }).catch(() => {});
  assert.deepEqual(await bridge.exit(), { code: 3, signal: null });
  assert.ok(
    bridge.stderr.includes('ZCode host worker exited unexpectedly with code 3'),
    bridge.stderr,
  );
});

test('an unexpected worker exit with code 0 still ends the bridge with 1', async (t) => {
  const bridge = Bridge.start(t);
  bridge.call('agent', 'initialize', { fakeControl: { exitWorker: 0 } }).catch(() => {});
  assert.deepEqual(await bridge.exit(), { code: 1, signal: null });
});

test('a worker error is reported on stderr and ends the bridge with 1', async (t) => {
  const bridge = Bridge.start(t);
  bridge
    .call('agent', 'initialize', { fakeControl: { crashWorker: 'host exploded' } })
    .catch(() => {});
  assert.deepEqual(await bridge.exit(), { code: 1, signal: null });
  assert.ok(bridge.stderr.includes('ZCode host worker failed: host exploded'), bridge.stderr);
  bridge.assertCleanStdout();
});
