// `__subscribe` / `__unsubscribe`: host events forwarded as `event` notifications, the task
// operations' effects seen through them, and subscription id rules.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Bridge, WORKSPACE } from './harness.mjs';

async function startWithSession(t) {
  const bridge = Bridge.start(t);
  const { session } = await bridge.callOk('agent', 'createSession', { workspacePath: WORKSPACE });
  return { bridge, sessionId: session.sessionId };
}

function target(sessionId) {
  return {
    workspacePath: WORKSPACE,
    sessionId,
    deliveryKind: 'desktop-continuous',
    includeSnapshot: true,
  };
}

async function subscribe(bridge, subscriptionId, sessionId) {
  const frame = await bridge.request('__subscribe', { subscriptionId, target: target(sessionId) });
  assert.deepEqual(frame.result, { subscribed: true }, JSON.stringify(frame));
}

function sendPrompt(bridge, sessionId, content) {
  return bridge.callOk('agent', 'sendPrompt', {
    workspacePath: WORKSPACE,
    sessionId,
    inputId: 'input-1',
    content,
  });
}

const isSessionEvent = (type) => (event) =>
  event.type === 'session.event' && event.event.type === type;

test('host events are forwarded as event notifications, snapshot first', async (t) => {
  const { bridge, sessionId } = await startWithSession(t);
  await subscribe(bridge, 'sub-1', sessionId);
  assert.deepEqual(await sendPrompt(bridge, sessionId, 'hello'), { sessionId, accepted: true });
  await bridge.waitForEvent('sub-1', isSessionEvent('turn.completed'), 'turn.completed');

  const events = bridge.events('sub-1');
  assert.equal(events[0].type, 'snapshot');
  assert.equal(events[0].snapshot.session.sessionId, sessionId);
  assert.deepEqual(
    events.slice(1).map(({ type, event }) => [type, event.type, event.seq]),
    [
      ['session.event', 'turn.started', 1],
      ['session.event', 'model.streaming', 2],
      ['session.event', 'turn.completed', 3],
    ],
  );
  assert.deepEqual(events[2].event.payload, {
    kind: 'text_delta',
    delta: 'Echo: hello',
    assistantMessageId: 'message-2',
  });
  bridge.assertCleanStdout();
});

test('a permission answer through task.respondPermission reaches the running turn', async (t) => {
  const { bridge, sessionId } = await startWithSession(t);
  await subscribe(bridge, 'sub-1', sessionId);
  await sendPrompt(bridge, sessionId, 'run ls [permission]');
  const { request } = await bridge.waitForEvent(
    'sub-1',
    (event) => event.type === 'permission.request',
    'permission',
  );

  const answer = {
    workspacePath: WORKSPACE,
    requestId: request.requestId,
    taskId: sessionId,
    optionId: 'allow',
  };
  assert.equal(await bridge.callOk('task', 'respondPermission', answer), null);
  await bridge.waitForEvent('sub-1', isSessionEvent('turn.completed'), 'turn.completed');

  const resolved = bridge.events('sub-1').find(isSessionEvent('permission.resolved'));
  assert.deepEqual(resolved.event.payload, { requestId: request.requestId, optionId: 'allow' });
  const tool = bridge.events('sub-1').find(isSessionEvent('tool.updated'));
  assert.equal(tool.event.payload.kind, 'result');
});

test('a structured-input answer through task.respondElicitation reaches the running turn', async (t) => {
  const { bridge, sessionId } = await startWithSession(t);
  await subscribe(bridge, 'sub-1', sessionId);
  await sendPrompt(bridge, sessionId, 'pick [question]');
  const { request } = await bridge.waitForEvent(
    'sub-1',
    (event) => event.type === 'userInput.request',
    'question',
  );

  const answer = {
    workspacePath: WORKSPACE,
    requestId: request.requestId,
    taskId: sessionId,
    action: 'accept',
    content: { colour: 'red' },
  };
  assert.equal(await bridge.callOk('task', 'respondElicitation', answer), null);
  const response = await bridge.waitForEvent(
    'sub-1',
    (event) => event.type === 'userInput.response',
    'response',
  );
  assert.deepEqual(response, {
    type: 'userInput.response',
    requestId: request.requestId,
    response: { action: 'accept', content: { colour: 'red' } },
  });
});

test('task.stopGeneration cancels the running turn', async (t) => {
  const { bridge, sessionId } = await startWithSession(t);
  await subscribe(bridge, 'sub-1', sessionId);
  await sendPrompt(bridge, sessionId, 'wait [hold]');
  await bridge.waitForEvent('sub-1', isSessionEvent('turn.started'), 'turn.started');

  assert.equal(
    await bridge.callOk('task', 'stopGeneration', { workspacePath: WORKSPACE, taskId: sessionId }),
    null,
  );
  const completed = await bridge.waitForEvent(
    'sub-1',
    isSessionEvent('turn.completed'),
    'turn.completed',
  );
  assert.deepEqual(completed.event.payload, { resultType: 'cancelled' });
});

test('no events are forwarded after __unsubscribe, and the host listener is disposed', async (t) => {
  const { bridge, sessionId } = await startWithSession(t);
  await subscribe(bridge, 'gone', sessionId);
  await subscribe(bridge, 'kept', sessionId);
  assert.equal((await bridge.hostReport()).subscribers, 2);

  const frame = await bridge.request('__unsubscribe', { subscriptionId: 'gone' });
  assert.deepEqual(frame, { id: frame.id, result: { unsubscribed: true } });
  const afterUnsubscribe = bridge.frames.indexOf(frame);

  await sendPrompt(bridge, sessionId, 'hello');
  await bridge.waitForEvent('kept', isSessionEvent('turn.completed'), 'turn.completed');
  // Host answers travel the same port as host events, so once this is answered every event the
  // host emitted before it has been through the bridge.
  const report = await bridge.hostReport();

  assert.deepEqual([report.subscribers, report.activeSubscriptions], [1, 1]);
  assert.deepEqual(bridge.events('gone', afterUnsubscribe), []);
  assert.equal(bridge.events('kept', afterUnsubscribe).length, 3);
});

test('__unsubscribe of an unknown id still answers unsubscribed, and an id can be reused', async (t) => {
  const { bridge, sessionId } = await startWithSession(t);
  const unknown = await bridge.request('__unsubscribe', { subscriptionId: 'never-made' });
  assert.deepEqual(unknown.result, { unsubscribed: true });

  await subscribe(bridge, 'again', sessionId);
  await bridge.request('__unsubscribe', { subscriptionId: 'again' });
  await subscribe(bridge, 'again', sessionId);
  assert.equal((await bridge.hostReport()).subscribers, 1);
});

test('a duplicate subscription id is refused and does not reach the host', async (t) => {
  const { bridge, sessionId } = await startWithSession(t);
  await subscribe(bridge, 'sub-1', sessionId);
  const duplicate = await bridge.request('__subscribe', {
    subscriptionId: 'sub-1',
    target: target(sessionId),
  });
  assert.deepEqual(duplicate.error, { code: -32000, message: 'Duplicate subscription id' });
  assert.equal((await bridge.hostReport()).subscribers, 1);
});

test('subscription ids must be non-empty strings', async (t) => {
  const { bridge, sessionId } = await startWithSession(t);
  for (const params of [
    { subscriptionId: '', target: target(sessionId) },
    { subscriptionId: 7, target: target(sessionId) },
    { target: target(sessionId) },
    null,
  ]) {
    const frame = await bridge.request('__subscribe', params);
    assert.deepEqual(
      frame.error,
      { code: -32000, message: 'Invalid subscription id' },
      JSON.stringify(params),
    );
  }
  assert.equal((await bridge.hostReport()).subscribers, 0);
});
