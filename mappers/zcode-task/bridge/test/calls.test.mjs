// `__call`: the host start-up handshake, the allowlist, result and error framing, line
// handling, concurrency, and stdout isolation.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Bridge, PROTOCOL, WORKSPACE, bridgeEnv } from './harness.mjs';

const AGENT_METHODS = [
  'initialize',
  'readWorkspaceState',
  'createSession',
  'resumeSession',
  'listSessions',
  'readSession',
  'readSessionMessages',
  'readSessionEvents',
  'sendPrompt',
  'closeSession',
  'setModel',
  'setThoughtLevel',
  'setMode',
  'getTaskTokenUsage',
  'respondProviderRuntimeHeaders',
  'disposeWorkspace',
];

test('the host worker sees an Electron utility process and gets init-local with a port', async (t) => {
  const bridge = Bridge.start(t);
  const report = await bridge.hostReport();

  assert.deepEqual(report.parentPort, {
    enumerable: false,
    configurable: true,
    members: ['off', 'on', 'once', 'postMessage'],
  });
  assert.deepEqual(report.init, {
    messageKeys: ['data', 'ports'],
    data: {
      type: 'init-local',
      deviceMid: 'zcode-acp-headless',
      agentSpawnFallbackCwd: bridge.cwd,
    },
    portCount: 1,
    portMembers: ['close', 'off', 'on', 'once', 'postMessage', 'start'],
  });
  assert.deepEqual(report.otherParentMessages, []);
  bridge.assertCleanStdout();
});

test('host console output never reaches stdout', async (t) => {
  const bridge = Bridge.start(t);
  await bridge.callOk('agent', 'createSession', { workspacePath: WORKSPACE });
  const report = await bridge.hostReport();
  assert.ok(report.consoleWrites > 0, 'the fake host should have logged');
  assert.equal(await bridge.closeStdin().then(({ code }) => code), 0);

  // The fake host also wrote a non-JSON line and a forged frame to its stdout.
  bridge.assertCleanStdout();
  // The RPC chunk runs on the bridge's main thread; its output is diverted to stderr...
  assert.ok(bridge.stderr.includes('[fake-zcode-host] rpc chunk loaded'), bridge.stderr);
  // ...while the worker's output is swallowed.
  assert.ok(!bridge.stderr.includes('host module loaded'), bridge.stderr);
});

test('every allowlisted agent method reaches the host', async (t) => {
  const bridge = Bridge.start(t);
  const params = {
    workspacePath: WORKSPACE,
    sessionId: 'session-1',
    mode: 'plan',
    content: 'hello',
  };
  await bridge.callOk('agent', 'createSession', { workspacePath: WORKSPACE });
  for (const method of AGENT_METHODS) {
    const frame = await bridge.call('agent', method, params);
    assert.ok('result' in frame, `agent.${method}: ${JSON.stringify(frame)}`);
  }
  const report = await bridge.hostReport();
  assert.deepEqual(report.agentCalls, ['createSession', ...AGENT_METHODS, 'readSessionEvents']);
  bridge.assertCleanStdout();
});

test('the protocol operations reach the task service with their params', async (t) => {
  const bridge = Bridge.start(t);
  const { session } = await bridge.callOk('agent', 'createSession', { workspacePath: WORKSPACE });
  const taskId = session.sessionId;

  const stop = { workspacePath: WORKSPACE, taskId };
  assert.deepEqual(await bridge.call('task', 'stopGeneration', stop), { id: 2, result: null });

  // No request is pending, so the fake host refuses them: the message proves they got there.
  const permission = {
    workspacePath: WORKSPACE,
    requestId: 'request-9',
    taskId,
    optionId: 'allow',
  };
  assert.deepEqual(await bridge.call('task', 'respondPermission', permission), {
    id: 3,
    error: { code: -32000, message: 'Unknown permission request: request-9' },
  });
  const elicitation = {
    workspacePath: WORKSPACE,
    requestId: 'request-8',
    taskId,
    action: 'decline',
  };
  assert.deepEqual(await bridge.call('task', 'respondElicitation', elicitation), {
    id: 4,
    error: { code: -32000, message: 'Unknown question request: request-8' },
  });

  const report = await bridge.hostReport();
  assert.deepEqual(report.taskCalls, [
    { method: 'stopGeneration', params: stop },
    { method: 'respondPermission', params: permission },
    { method: 'respondElicitation', params: elicitation },
  ]);
});

test('readSession leaves the bridge with each message part cut to its type', async (t) => {
  const bridge = Bridge.start(t);
  const { session } = await bridge.callOk('agent', 'createSession', { workspacePath: WORKSPACE });
  const params = { workspacePath: WORKSPACE, sessionId: session.sessionId };
  await bridge.callOk('agent', 'sendPrompt', { ...params, content: 'the whole text' });
  const read = await bridge.callOk('agent', 'readSession', params);
  const parts = read.messages.flatMap((message) => message.parts);
  assert.ok(parts.length > 0);
  assert.deepEqual(parts, parts.map(() => ({ type: 'text' })));
  assert.equal(read.session.sessionId, session.sessionId);
  assert.ok(!JSON.stringify(read).includes('the whole text'));
  // Other reads are not projected.
  const resumed = await bridge.callOk('agent', 'resumeSession', params);
  assert.deepEqual(resumed.messages[0].parts, [{ type: 'text', text: 'the whole text' }]);
  bridge.assertCleanStdout();
});

test('calls outside the allowlist are refused before reaching the host', async (t) => {
  const bridge = Bridge.start(t);
  const refusals = [
    [
      { service: 'agent', method: 'onDynamicSessionEvent' },
      'Unsupported native bridge method: agent:onDynamicSessionEvent',
    ],
    [
      { service: 'agent', method: 'stopGeneration' },
      'Unsupported native bridge method: agent:stopGeneration',
    ],
    [{ service: 'agent', method: 'toString' }, 'Unsupported native bridge method: agent:toString'],
    [
      { service: 'task', method: 'createSession' },
      'Unsupported native bridge method: task:createSession',
    ],
    [{ service: 'task' }, 'Unsupported native bridge method: task:undefined'],
    [
      { service: 'model-selection', method: 'setModel' },
      'Unsupported bridge service: model-selection',
    ],
    [{ service: '__proto__', method: 'initialize' }, 'Unsupported bridge service: __proto__'],
    [{ method: 'initialize' }, 'Unsupported bridge service: undefined'],
  ];
  for (const [params, message] of refusals) {
    const frame = await bridge.request('__call', {
      ...params,
      params: { workspacePath: WORKSPACE },
    });
    assert.deepEqual(frame.error, { code: -32000, message }, JSON.stringify(params));
  }
  const unknown = await bridge.request('session/new', { cwd: WORKSPACE });
  assert.deepEqual(unknown.error, {
    code: -32000,
    message: 'Unsupported bridge method: session/new',
  });

  const report = await bridge.hostReport();
  assert.deepEqual([report.agentCalls, report.taskCalls], [['readSessionEvents'], []]);
});

test('task methods are allowed only as named by the protocol descriptor', async (t) => {
  const protocol = {
    ...PROTOCOL,
    operations: { cancelGeneration: PROTOCOL.operations.cancelGeneration },
  };
  const bridge = Bridge.start(t, {
    env: bridgeEnv({ ZCODE_ACP_HOST_PROTOCOL: JSON.stringify(protocol) }),
  });
  const { session } = await bridge.callOk('agent', 'createSession', { workspacePath: WORKSPACE });

  const stop = await bridge.call('task', 'stopGeneration', {
    workspacePath: WORKSPACE,
    taskId: session.sessionId,
  });
  assert.equal(stop.result, null);
  const permission = await bridge.call('task', 'respondPermission', { taskId: session.sessionId });
  assert.equal(
    permission.error.message,
    'Unsupported native bridge method: task:respondPermission',
  );
});

test('a method returning undefined is answered with an explicit null result', async (t) => {
  const bridge = Bridge.start(t);
  const { session } = await bridge.callOk('agent', 'createSession', { workspacePath: WORKSPACE });
  const frame = await bridge.call('agent', 'closeSession', {
    workspacePath: WORKSPACE,
    sessionId: session.sessionId,
  });
  assert.deepEqual(frame, { id: 2, result: null });
  assert.ok(bridge.frames.includes(frame));
});

test('a host error becomes a -32000 error frame with its message', async (t) => {
  const bridge = Bridge.start(t);
  const frame = await bridge.call('agent', 'readSession', {
    workspacePath: WORKSPACE,
    sessionId: 'nope',
  });
  assert.deepEqual(frame, { id: 1, error: { code: -32000, message: 'Session not found: nope' } });
});

test('invalid JSON gets -32700 with id null and the bridge keeps serving', async (t) => {
  const bridge = Bridge.start(t);
  bridge.sendLine('{"id":1,"method":');
  const frame = await bridge.waitFor(
    (candidate) => candidate.id === null,
    'the invalid-JSON answer',
  );
  assert.deepEqual(frame, { id: null, error: { code: -32700, message: 'Invalid JSON' } });
  assert.deepEqual(await bridge.callOk('agent', 'initialize', { workspacePath: WORKSPACE }), {
    available: true,
  });
  bridge.assertCleanStdout();
});

test('requests whose id is neither an integer nor a string are ignored', async (t) => {
  const bridge = Bridge.start(t);
  const ignoredIds = [1.5, null, true, { n: 1 }, [1]];
  const call = {
    service: 'agent',
    method: 'disposeWorkspace',
    params: { workspacePath: WORKSPACE },
  };
  for (const id of ignoredIds)
    bridge.sendLine(JSON.stringify({ id, method: '__call', params: call }));
  bridge.sendLine(JSON.stringify({ method: '__call', params: call }));
  bridge.sendLine(JSON.stringify([{ id: 7, method: '__call', params: call }]));
  bridge.sendLine('42');

  // Lines are handed to the host in order, so the report shows whether any of them got through.
  const report = await bridge.hostReport();
  assert.deepEqual(report.agentCalls, ['readSessionEvents']);
  assert.equal((await bridge.closeStdin()).code, 0);
  assert.deepEqual(
    bridge.frames.map((frame) => frame.id),
    [1],
  );
});

test('string ids, zero, CRLF line ends and blank lines are handled', async (t) => {
  const bridge = Bridge.start(t);
  const initialize = { service: 'agent', method: 'initialize', params: {} };
  bridge.sendLine('');
  bridge.sendLine('   \r');
  bridge.sentIds.add('req-a');
  bridge.sendLine(`${JSON.stringify({ id: 'req-a', method: '__call', params: initialize })}\r`);
  const first = await bridge.response('req-a');
  assert.deepEqual(first, { id: 'req-a', result: { available: true } });

  const zero = await bridge.request('__call', initialize, 0);
  assert.deepEqual(zero, { id: 0, result: { available: true } });
  bridge.assertCleanStdout();
});

test('requests are dispatched concurrently: a held call does not block the next one', async (t) => {
  const bridge = Bridge.start(t);
  // The first call is answered only once the second one has reached the host; a bridge that
  // handled one request at a time would never answer either.
  const held = bridge.call('agent', 'listSessions', {
    workspacePath: WORKSPACE,
    fakeControl: { waitGate: 'g' },
  });
  const opener = bridge.call('agent', 'initialize', {
    workspacePath: WORKSPACE,
    fakeControl: { openGate: 'g' },
  });
  const [heldFrame, openerFrame] = await Promise.all([held, opener]);

  assert.deepEqual(heldFrame, { id: 1, result: [] });
  assert.deepEqual(openerFrame, { id: 2, result: { available: true } });
  assert.ok(
    bridge.frames.indexOf(openerFrame) < bridge.frames.indexOf(heldFrame),
    'responses come back as ready',
  );
});
