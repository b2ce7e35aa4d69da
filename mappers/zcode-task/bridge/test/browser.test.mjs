// Browser control: the headless bridge refuses every well-formed browser-execute request with
// `backend_unavailable`, answers nothing else, and never echoes the request payload.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BROWSER_UNAVAILABLE, Bridge, WORKSPACE } from './harness.mjs';

test('browser-execute requests are refused; malformed ones and other messages are ignored', async (t) => {
  const bridge = Bridge.start(t);
  const { session } = await bridge.callOk('agent', 'createSession', { workspacePath: WORKSPACE });
  const sessionId = session.sessionId;
  await bridge.request('__subscribe', {
    subscriptionId: 'sub-1',
    target: {
      workspacePath: WORKSPACE,
      sessionId,
      deliveryKind: 'desktop-continuous',
      includeSnapshot: true,
    },
  });

  // The fake host posts a request with an empty id, one without an id, then a valid one, and
  // finishes the turn once the valid one is answered.
  await bridge.callOk('agent', 'sendPrompt', {
    workspacePath: WORKSPACE,
    sessionId,
    content: 'look [browser]',
  });
  await bridge.waitForEvent(
    'sub-1',
    (event) => event.type === 'session.event' && event.event.type === 'turn.completed',
    'turn.completed',
  );

  const report = await bridge.hostReport();
  assert.deepEqual(report.browserReplies, [
    {
      messageKeys: ['data', 'ports'],
      portCount: 0,
      data: { type: 'browser-execute-result', requestId: 'browser-1', result: BROWSER_UNAVAILABLE },
    },
  ]);
  const tool = bridge.events('sub-1').find((event) => event.event?.type === 'tool.updated');
  assert.deepEqual(tool.event.payload.error, { message: BROWSER_UNAVAILABLE.error.message });
  // The browser exchange stays between the bridge and the host.
  assert.ok(!JSON.stringify(bridge.frames).includes('fake-secret'));
  bridge.assertCleanStdout();
});
