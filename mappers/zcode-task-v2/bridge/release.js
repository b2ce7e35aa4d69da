// ----- release: task protocol generation 2, ZCode 3.12.3 (the shared core follows) ---------
//
// What the 3.12.3 host differs in, for the core below: `readWorkspaceState` is gone and
// `readWorkspacePresentation` is new; the `model-selection` service's `getView` is allowed, and
// its result is projected here, inside ZCode's runtime, because the raw view carries provider
// credentials; `init-local` carries the path of the built-in provider config the 3.12.3 host
// needs to start.
'use strict';

const { statSync } = require('node:fs');

const RELEASE = {
  protocol: 'zcode-task-v2',
  // Agent-service methods the adapter may call.
  agentMethods: [
    'initialize',
    'readWorkspacePresentation',
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
  // The model catalogue; its result leaves the bridge only as `projectModelSelectionView` made it.
  services: {
    modelSelection: { methods: ['getView'], project: { getView: projectModelSelectionView } },
  },
  readConfig: (env) => ({ providerConfig: readProviderConfig(env.ZCODE_ACP_HOST_PROVIDER_CONFIG) }),
  initLocal: (config) => ({ zcodeBuiltinProviderConfigFilePath: config.providerConfig }),
};

// The 3.12.3 host does not start without the provider table ZCode bundles; a wrong path would
// only show as an initialization that never finishes, so it is checked here.
function readProviderConfig(path) {
  if (!isNonEmptyString(path)) {
    throw new Error('Missing ZCode built-in provider config (ZCODE_ACP_HOST_PROVIDER_CONFIG)');
  }
  let isFile = false;
  try {
    isFile = statSync(path).isFile();
  } catch {
    // Reported below.
  }
  if (!isFile) throw new Error(`ZCode built-in provider config is not a file: ${path}`);
  return path;
}

// ----- model selection -----------------------------------------------------------------

// The raw view holds each provider's configuration, API keys and headers included. Only ids,
// names, reasoning levels and the resolution leave the bridge, picked field by field; anything
// shaped otherwise fails the call instead of being passed on.
function projectModelSelectionView(view) {
  const unexpected = () => new Error('ZCode model selection view has an unexpected shape');
  if (!isPlainObject(view) || !Number.isInteger(view.revision) || view.revision < 0) {
    throw unexpected();
  }
  if (!Array.isArray(view.providers)) throw unexpected();
  const models = [];
  for (const provider of view.providers) {
    if (!isPlainObject(provider) || !isNonEmptyString(provider.providerId)) throw unexpected();
    if (!Array.isArray(provider.models)) throw unexpected();
    for (const model of provider.models) {
      if (!isPlainObject(model) || !isNonEmptyString(model.modelId)) throw unexpected();
      const levels = model.config?.optionSpecs?.reasoningLevel?.values ?? [];
      if (!Array.isArray(levels) || !levels.every(isNonEmptyString)) throw unexpected();
      const entry = {
        ref: { providerId: provider.providerId, modelId: model.modelId },
        label: model.modelId,
        reasoningLevels: [...levels],
      };
      if (isNonEmptyString(provider.providerName)) entry.providerLabel = provider.providerName;
      models.push(entry);
    }
  }
  const projected = { revision: view.revision, models };
  for (const key of ['preferredSelection', 'effectiveSelection']) {
    if (view[key] !== undefined && view[key] !== null) {
      projected[key] = projectSelection(view[key], unexpected);
    }
  }
  if (view.selectionIssue !== undefined && view.selectionIssue !== null) {
    projected.selectionIssue = issueText(view.selectionIssue);
  }
  return projected;
}

function projectSelection(selection, unexpected) {
  if (!isPlainObject(selection)) throw unexpected();
  const { providerId, modelId } = selection;
  if (!isNonEmptyString(providerId) || !isNonEmptyString(modelId)) throw unexpected();
  const projected = { providerId, modelId };
  const level = selection.options?.reasoningLevel;
  if (level !== undefined && level !== null) {
    if (!isNonEmptyString(level)) throw unexpected();
    projected.options = { reasoningLevel: level };
  }
  return projected;
}

function issueText(issue) {
  if (isNonEmptyString(issue)) return issue;
  if (isPlainObject(issue) && isNonEmptyString(issue.code)) return issue.code;
  return 'unresolved';
}
