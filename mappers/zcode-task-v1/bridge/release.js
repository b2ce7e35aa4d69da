// ----- release: task protocol generation 1, ZCode 3.11.2 (the shared core follows) ---------
//
// What the 3.11.2 host differs in, for the core below: the agent methods the adapter may call.
// 3.11.2 has no further services and needs nothing more in `init-local`.
'use strict';

const RELEASE = {
  protocol: 'zcode-task-v1',
  // Agent-service methods the adapter may call.
  agentMethods: [
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
  ],
  // Services besides agent and the descriptor's operations: name -> { methods, project }.
  services: {},
  // The release's own configuration from the environment (checked before anything starts).
  readConfig: () => ({}),
  // Fields the release adds to the host's `init-local` message.
  initLocal: () => ({}),
};
