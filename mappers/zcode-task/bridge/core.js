// ----- core: what every generation of the task protocol shares ---------------------------
//
// zcode-acp bridge for ZCode's task protocol. ZCode's own Electron executable runs this text
// with ELECTRON_RUN_AS_NODE=1 as `-e <text>`: a generation's release part (which defines
// `RELEASE`) followed by this core. `-e` code is a CommonJS script, so built-ins come from
// `require` and ES modules (the host files) from dynamic `import()`. The env/stdio contract is
// in README.md next to this file.
//
// Shape: the official host service (`out/host/index.js`) runs in a worker thread that believes
// it is an Electron utility process; this main thread holds the other end of its message port,
// turns it into service proxies with ZCode's own RPC chunk, and serves NDJSON on stdin/stdout.
// Before it imports a host file it checks the file's SHA-256 against the release descriptor,
// so a file changed after the core verified the install is never run. (`'use strict'` is the
// release part's first line: a directive only counts at the start of the script.)

const { Worker, MessageChannel } = require('node:worker_threads');
const { pathToFileURL } = require('node:url');
const { createHash } = require('node:crypto');
const { readFileSync } = require('node:fs');
const readline = require('node:readline');

const DEFAULT_RPC_EXPORTS = { protocol: 'g', client: 'i', service: 'j' };

// The only answer a headless bridge can give to the host's browser-control requests.
const BROWSER_UNAVAILABLE = {
  ok: false,
  error: {
    code: 'backend_unavailable',
    message: 'Browser control is unavailable in zcode-acp headless mode',
    sideEffect: 'none',
  },
  elapsedMs: 0,
};

const SHUTDOWN_GRACE_MS = 2000;

const state = {
  shuttingDown: false,
  worker: null,
  lineReader: null,
  /** subscriptionId -> { disposable } */
  subscriptions: new Map(),
};

// ----- configuration ---------------------------------------------------------------------

function readConfig(env) {
  const hostIndex = env.ZCODE_ACP_HOST_INDEX;
  const rpcModule = env.ZCODE_ACP_HOST_RPC_MODULE;
  const artifactText = env.ZCODE_ACP_HOST_ARTIFACT;
  const protocolText = env.ZCODE_ACP_HOST_PROTOCOL;
  if (!hostIndex || !rpcModule || !artifactText || !protocolText) {
    throw new Error('Missing ZCode host artifact or protocol');
  }
  const artifact = parseJsonObject(artifactText, 'ZCODE_ACP_HOST_ARTIFACT');
  const protocol = parseJsonObject(protocolText, 'ZCODE_ACP_HOST_PROTOCOL');
  for (const [what, id] of [
    ['protocol', protocol.id],
    ['artifact', artifact.protocolId],
  ]) {
    if (id !== RELEASE.protocol) {
      throw new Error(`ZCode host ${what} is for ${id}, this bridge for ${RELEASE.protocol}`);
    }
  }
  const serviceChannels = readServiceChannels(protocol);
  return {
    hostIndex,
    rpcModule,
    hostIndexSha256: readSha256(artifact, 'hostIndexSha256'),
    rpcModuleSha256: readSha256(artifact, 'hostRpcModuleSha256'),
    rpcExports: readRpcExports(artifact),
    serviceChannels,
    allowedCalls: buildAllowlist(protocol, serviceChannels),
    release: RELEASE.readConfig(env),
  };
}

function readSha256(artifact, key) {
  const hash = artifact[key];
  if (typeof hash !== 'string' || !/^[0-9a-f]{64}$/.test(hash)) {
    throw new Error(`Invalid ZCode host artifact: ${key} must be a lowercase hex SHA-256`);
  }
  return hash;
}

// Reads the file the bridge is about to import and compares its hash with the descriptor's.
function verifyFile(file, expected, what) {
  let bytes;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    throw new Error(`Cannot read the ZCode ${what} ${file}: ${errorMessage(error)}`);
  }
  const actual = createHash('sha256').update(bytes).digest('hex');
  if (actual !== expected) {
    throw new Error(`ZCode ${what} hash does not match the release descriptor`);
  }
}

function parseJsonObject(text, variable) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error(`${variable} is not valid JSON`);
  }
  if (!isPlainObject(value)) throw new Error(`${variable} must be a JSON object`);
  return value;
}

function readRpcExports(artifact) {
  if (artifact.rpcExports === undefined) return DEFAULT_RPC_EXPORTS;
  const names = artifact.rpcExports;
  const valid =
    isPlainObject(names) &&
    Object.keys(DEFAULT_RPC_EXPORTS).every((role) => isNonEmptyString(names[role]));
  if (!valid) {
    throw new Error(
      'Invalid ZCode host artifact: rpcExports must name protocol, client and service',
    );
  }
  return names;
}

function readServiceChannels(protocol) {
  const channels = protocol.serviceChannels;
  const required = ['agent', ...Object.keys(RELEASE.services)];
  const valid =
    isPlainObject(channels) &&
    Object.values(channels).every(isNonEmptyString) &&
    required.every((service) => isNonEmptyString(channels[service]));
  if (!valid) {
    throw new Error(
      `Invalid ZCode host protocol: serviceChannels must map service names (including ${required.join(' and ')}) to channels`,
    );
  }
  return channels;
}

function buildAllowlist(protocol, serviceChannels) {
  // Agent and release services are fixed in the script; task-service methods are allowed only
  // when the protocol descriptor names them as operations, so a descriptor cannot widen this.
  const allowed = new Set(RELEASE.agentMethods.map((method) => `agent:${method}`));
  for (const [service, { methods }] of Object.entries(RELEASE.services)) {
    for (const method of methods) allowed.add(`${service}:${method}`);
  }
  const operations = protocol.operations === undefined ? {} : protocol.operations;
  if (!isPlainObject(operations)) {
    throw new Error('Invalid ZCode host protocol: operations must be an object');
  }
  for (const [name, operation] of Object.entries(operations)) {
    const valid =
      isPlainObject(operation) &&
      isNonEmptyString(operation.method) &&
      isNonEmptyString(operation.service) &&
      Object.hasOwn(serviceChannels, operation.service);
    if (!valid) {
      throw new Error(
        `Invalid ZCode host protocol: operation ${name} must name a method of a known service`,
      );
    }
    allowed.add(`${operation.service}:${operation.method}`);
  }
  return allowed;
}

// ----- stdout --------------------------------------------------------------------------

// Frames are the only thing allowed on stdout. Code loaded into this thread (the RPC chunk)
// could print, so every other stdout write is diverted to stderr; only `writeLine` keeps the
// original writer.
const writeStdout = process.stdout.write.bind(process.stdout);
process.stdout.write = (...args) => process.stderr.write(...args);

function writeLine(text) {
  writeStdout(`${text}\n`);
}

// ----- host worker ---------------------------------------------------------------------

// Runs inside the worker. It is shipped as source text (see startHostWorker), so it must not
// use anything from the enclosing script. Electron hands utility-process listeners
// `{data, ports}` and MessagePortMain listeners `{data}`; Node hands both the raw value, so the
// emulation translates `message` events and leaves every other event as it is.
async function runHostWorker(hostIndexUrl) {
  const { parentPort } = await import('node:worker_threads');

  function listenerFacade(target, toElectronMessage) {
    const translated = new Map(); // original listener -> translating listener, for `off`
    const forTarget = (event, listener) => {
      if (event !== 'message') return listener;
      if (!translated.has(listener)) {
        translated.set(listener, (value) => listener(toElectronMessage(value)));
      }
      return translated.get(listener);
    };
    return {
      on(event, listener) {
        target.on(event, forTarget(event, listener));
        return this;
      },
      once(event, listener) {
        target.once(event, forTarget(event, listener));
        return this;
      },
      off(event, listener) {
        target.off(event, forTarget(event, listener));
        return this;
      },
    };
  }

  function asMessagePortMain(port) {
    return Object.assign(
      listenerFacade(port, (value) => ({ data: value })),
      {
        postMessage: (value, transfer) => port.postMessage(value, transfer),
        start: () => port.start(),
        close: () => port.close(),
      },
    );
  }

  const utilityParentPort = Object.assign(
    listenerFacade(parentPort, (value) => ({
      ...value,
      ports: Array.isArray(value?.ports) ? value.ports.map(asMessagePortMain) : [],
    })),
    { postMessage: (value, transfer) => parentPort.postMessage(value, transfer) },
  );
  Object.defineProperty(process, 'parentPort', {
    value: utilityParentPort,
    enumerable: false,
    configurable: true,
  });

  await import(hostIndexUrl);
}

function startHostWorker(hostIndex, expectedSha256) {
  verifyFile(hostIndex, expectedSha256, 'host index');
  const source =
    "const { workerData } = await import('node:worker_threads');\n" +
    `await (${runHostWorker})(workerData.hostIndexUrl);\n`;
  const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(source)}`), {
    workerData: { hostIndexUrl: pathToFileURL(hostIndex).href },
    stdout: true,
    stderr: true,
  });
  // The host logs freely; none of it may reach the NDJSON stdout, and unread output must not
  // stall the worker.
  worker.stdout.resume();
  worker.stderr.resume();

  worker.on('message', answerBrowserRequest);
  worker.on('error', (error) => {
    if (!state.shuttingDown) fail(`ZCode host worker failed: ${errorMessage(error)}`);
  });
  worker.on('exit', (code) => {
    // During shutdown this is the host having disposed: nothing is left to wait for.
    if (state.shuttingDown) process.exit(0);
    process.stderr.write(`ZCode host worker exited unexpectedly with code ${code}\n`);
    process.exit(code || 1);
  });
  return worker;
}

function answerBrowserRequest(message) {
  const isBrowserRequest =
    isPlainObject(message) &&
    message.type === 'browser-execute-request' &&
    isNonEmptyString(message.requestId);
  if (!isBrowserRequest) return;
  // Only the request id goes back: the request payload is never copied.
  state.worker.postMessage({
    data: {
      type: 'browser-execute-result',
      requestId: message.requestId,
      result: BROWSER_UNAVAILABLE,
    },
    ports: [],
  });
}

// ----- host services -------------------------------------------------------------------

async function connectServices(config, worker) {
  verifyFile(config.rpcModule, config.rpcModuleSha256, 'host RPC module');
  const rpc = await import(pathToFileURL(config.rpcModule).href);
  const Protocol = rpc[config.rpcExports.protocol];
  const Client = rpc[config.rpcExports.client];
  const serviceFactory = rpc[config.rpcExports.service];
  if (
    typeof Protocol !== 'function' ||
    typeof Client !== 'function' ||
    typeof serviceFactory?.toService !== 'function'
  ) {
    throw new Error(
      'ZCode host RPC module does not export the expected protocol, client and service factory',
    );
  }

  const { port1, port2 } = new MessageChannel();
  const client = new Client(new Protocol(port1));
  const services = Object.create(null);
  for (const [name, channel] of Object.entries(config.serviceChannels)) {
    services[name] = serviceFactory.toService(client.getChannel(channel));
  }

  worker.postMessage(
    {
      data: {
        type: 'init-local',
        deviceMid: 'zcode-acp-headless',
        agentSpawnFallbackCwd: process.cwd(),
        ...RELEASE.initLocal(config.release),
      },
      ports: [port2],
    },
    [port2],
  );
  return services;
}

// ----- bridge methods ------------------------------------------------------------------

// Results the bridge answers only projected, whatever the release. zcode-acp reads a session
// (`readSession`) only at a turn's end, for its title and usage, and reads nothing of a message
// part but its type; the last message is the whole turn's text, megabytes after a long turn,
// which the turn's events already carried.
const PROJECTIONS = { 'agent:readSession': projectSessionRead };

// Each message part cut down to its type (`{}` where it has no string type). A result of
// another shape leaves as it came: the adapter's reader refuses it.
function projectSessionRead(result) {
  if (!isPlainObject(result) || !Array.isArray(result.messages)) return result;
  const cut = (part) => (isPlainObject(part) && typeof part.type === 'string' ? { type: part.type } : {});
  return {
    ...result,
    messages: result.messages.map((message) =>
      isPlainObject(message) && Array.isArray(message.parts)
        ? { ...message, parts: message.parts.map(cut) }
        : message,
    ),
  };
}

function createBridgeMethods(services, allowedCalls) {
  return {
    __call(params) {
      const { service, method } = isPlainObject(params) ? params : {};
      if (typeof service !== 'string' || !Object.hasOwn(services, service)) {
        throw new Error(`Unsupported bridge service: ${service}`);
      }
      if (!allowedCalls.has(`${service}:${method}`)) {
        throw new Error(`Unsupported native bridge method: ${service}:${method}`);
      }
      const result = services[service][method](params.params);
      // A release may allow a call only through a projection of its result (one that keeps
      // credentials inside ZCode's runtime).
      const project =
        PROJECTIONS[`${service}:${method}`] ?? RELEASE.services[service]?.project?.[method];
      return project ? Promise.resolve(result).then(project) : result;
    },

    __subscribe(params) {
      const subscriptionId = isPlainObject(params) ? params.subscriptionId : undefined;
      if (!isNonEmptyString(subscriptionId)) throw new Error('Invalid subscription id');
      if (state.subscriptions.has(subscriptionId)) throw new Error('Duplicate subscription id');

      const subscription = { disposable: null };
      state.subscriptions.set(subscriptionId, subscription);
      try {
        const onEvent = services.agent.onDynamicSessionEvent(params.target);
        subscription.disposable = onEvent((event) => writeEvent(subscriptionId, event));
      } catch (error) {
        state.subscriptions.delete(subscriptionId);
        throw error;
      }
      return { subscribed: true };
    },

    __unsubscribe(params) {
      const subscriptionId = isPlainObject(params) ? params.subscriptionId : undefined;
      disposeSubscription(subscriptionId);
      return { unsubscribed: true };
    },
  };
}

function disposeSubscription(subscriptionId) {
  const subscription = state.subscriptions.get(subscriptionId);
  if (!subscription) return;
  state.subscriptions.delete(subscriptionId);
  subscription.disposable?.dispose();
}

function writeEvent(subscriptionId, event) {
  try {
    writeLine(JSON.stringify({ method: 'event', params: { subscriptionId, event } }));
  } catch (error) {
    // Dropping the event silently would hide a broken host; ending the bridge makes the
    // adapter fail the affected sessions instead.
    fail(`ZCode host event could not be encoded as JSON: ${errorMessage(error)}`);
  }
}

// ----- stdin dispatch ------------------------------------------------------------------

function handleLine(line, methods) {
  if (line.trim() === '') return;
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    writeLine(JSON.stringify({ id: null, error: { code: -32700, message: 'Invalid JSON' } }));
    return;
  }
  const id = message?.id;
  if (!Number.isInteger(id) && typeof id !== 'string') return;
  // Not awaited: a slow host call must not hold back the requests behind it.
  void respond(id, message.method, message.params, methods);
}

async function respond(id, method, params, methods) {
  let line;
  try {
    if (typeof method !== 'string' || !Object.hasOwn(methods, method)) {
      throw new Error(`Unsupported bridge method: ${method}`);
    }
    const result = await methods[method](params);
    line = JSON.stringify({ id, result: result === undefined ? null : result });
  } catch (error) {
    line = JSON.stringify({ id, error: { code: -32000, message: errorMessage(error) } });
  }
  writeLine(line);
}

// ----- lifecycle -----------------------------------------------------------------------

function shutdown() {
  if (state.shuttingDown) return;
  state.shuttingDown = true;
  for (const subscriptionId of [...state.subscriptions.keys()]) {
    try {
      disposeSubscription(subscriptionId);
    } catch {
      // Shutting down regardless; the host goes away with this process.
    }
  }
  try {
    state.worker?.postMessage({ data: { type: 'dispose' }, ports: [] });
  } catch {
    // The worker is already gone.
  }
  state.lineReader?.close();
  process.stdin.destroy();
  // The host gets a grace period to dispose; it cannot keep the bridge alive past it.
  setTimeout(() => process.exit(0), SHUTDOWN_GRACE_MS).unref();
}

function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

async function main() {
  const config = readConfig(process.env);
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
  // A reader that went away cannot be answered any more.
  process.stdout.on('error', shutdown);

  state.worker = startHostWorker(config.hostIndex, config.hostIndexSha256);
  const services = await connectServices(config, state.worker);
  if (state.shuttingDown) return;

  const methods = createBridgeMethods(services, config.allowedCalls);
  state.lineReader = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  state.lineReader.on('line', (line) => handleLine(line, methods));
  state.lineReader.on('close', shutdown);
}

// ----- helpers -------------------------------------------------------------------------

function isPlainObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isNonEmptyString(value) {
  return typeof value === 'string' && value !== '';
}

function errorMessage(error) {
  const message =
    typeof error?.message === 'string' && error.message !== '' ? error.message : String(error);
  return message || 'ZCode host call failed without a message';
}

main().catch((error) => fail(errorMessage(error)));
