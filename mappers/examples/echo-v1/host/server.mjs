// The echo host: a tiny agent server speaking the made-up `echo` protocol of
// mappers/examples/echo-v1 (the wire format is in its src/wire.rs). It answers a prompt by
// echoing it back word by word. Two markers in a prompt exercise the protocol: `[gap]` drops
// the second chunk's event (it stays in the session, for `missed`), `[ping]` asks the client a
// question mid-turn and waits for the answer. Sessions live as long as the process.
//
// Run: node server.mjs (stdio), or node server.mjs --version.

const VERSION = '1.0.0';
const REQUEST = 0x01;
const ANSWER = 0x02;
const WELCOME = 0x81;
const REPLY = 0x82;
const EVENT = 0x83;
const MAX_FRAME = 1024 * 1024;

if (process.argv.includes('--version')) {
  process.stdout.write(`echo-host ${VERSION}\n`);
  process.exit(0);
}

const sessions = new Map();
const pings = new Map(); // ping id -> resolve
let nextSession = 1;
let nextPing = 1;
let authenticated = false;

function send(kind, body) {
  const frame = Buffer.alloc(5 + body.length);
  frame.writeUInt32BE(1 + body.length, 0);
  frame[4] = kind;
  body.copy(frame, 5);
  process.stdout.write(frame);
}

function reply(id, ok, value) {
  const head = Buffer.alloc(9);
  head.writeBigUInt64BE(id, 0);
  head[8] = ok ? 0 : 1;
  send(REPLY, Buffer.concat([head, Buffer.from(JSON.stringify(value))]));
}

// An event: route, then type, seq, and the type's payload.
function event(session, type, payload) {
  session.seq += 1;
  const route = Buffer.from(session.route ?? '');
  const head = Buffer.alloc(1 + route.length + 5);
  head[0] = route.length;
  route.copy(head, 1);
  head[1 + route.length] = type;
  head.writeUInt32BE(session.seq, 2 + route.length);
  return { seq: session.seq, frame: Buffer.concat([head, payload]) };
}

function emit(session, type, payload) {
  const { seq, frame } = event(session, type, payload);
  if (session.route) send(EVENT, frame);
  return seq;
}

function sessionOf(params) {
  const session = sessions.get(params?.sessionId);
  if (!session) throw new Error(`Unknown session: ${params?.sessionId}`);
  return session;
}

const methods = {
  status: () => ({ authenticated, sessions: sessions.size }),
  list: ({ cwd }) => ({
    sessions: [...sessions.values()]
      .filter((session) => session.cwd === cwd)
      .map((session) => ({ sessionId: session.id, title: session.title })),
  }),
  open: ({ cwd, route, sessionId }) => {
    if (typeof route !== 'string' || route === '') throw new Error('open needs a route');
    let session;
    if (sessionId === undefined) {
      session = { id: `echo-${nextSession++}`, cwd, title: '', entries: [], chunks: [], seq: 0 };
      sessions.set(session.id, session);
    } else {
      session = sessionOf({ sessionId });
      if (session.cwd !== cwd) throw new Error('Session belongs to another workspace');
    }
    session.route = route;
    return { sessionId: session.id };
  },
  history: ({ sessionId, cursor, limit }) => {
    const { entries } = sessionOf({ sessionId });
    const next = cursor + limit;
    return { entries: entries.slice(cursor, next), next: next < entries.length ? next : null };
  },
  missed: ({ sessionId, after, before }) => ({
    chunks: sessionOf({ sessionId }).chunks.filter((c) => c.seq > after && c.seq < before),
  }),
  prompt: (params) => {
    const session = sessionOf(params);
    if (session.turn) throw new Error('A turn is already running');
    session.title ||= params.text;
    session.entries.push({ role: 'user', text: params.text });
    session.turn = { cancelled: false };
    setImmediate(() => turn(session, params.text));
    return {};
  },
  cancel: (params) => {
    const session = sessionOf(params);
    if (session.turn) session.turn.cancelled = true;
  },
  close: (params) => {
    sessionOf(params).route = undefined;
    return {};
  },
};

// Requests a reply is never sent for (the client does not track them).
const UNTRACKED = new Set(['cancel']);

async function turn(session, text) {
  const words = text.match(/\S+\s*/g) ?? [];
  let said = '';
  for (const [index, word] of words.entries()) {
    if (session.turn.cancelled) break;
    const { seq, frame } = event(session, 1, Buffer.from(word));
    session.chunks.push({ seq, text: word });
    said += word;
    if (!(index === 1 && text.includes('[gap]')) && session.route) send(EVENT, frame);
    await new Promise(setImmediate);
  }
  if (text.includes('[ping]') && !session.turn.cancelled) {
    const id = BigInt(nextPing++);
    const answered = new Promise((resolve) => pings.set(id, resolve));
    const payload = Buffer.alloc(8);
    payload.writeBigUInt64BE(id);
    emit(session, 3, payload);
    await answered;
  }
  session.entries.push({ role: 'agent', text: said });
  const reason = session.turn.cancelled ? 'cancelled' : 'end_turn';
  session.turn = undefined;
  emit(session, 2, Buffer.from(reason));
}

function handle(body) {
  const kind = body[0];
  const id = body.readBigUInt64BE(1);
  const json = JSON.parse(body.subarray(9).toString('utf8'));
  if (kind === ANSWER) {
    pings.get(id)?.(json);
    pings.delete(id);
    return;
  }
  if (kind !== REQUEST) throw new Error(`Unknown frame kind ${kind}`);
  const method = methods[json.method];
  try {
    if (!method) throw new Error(`Unknown method: ${json.method}`);
    const result = method(json.params ?? {});
    if (!UNTRACKED.has(json.method)) reply(id, true, result);
  } catch (error) {
    reply(id, false, { message: error.message });
  }
}

let buffer = Buffer.alloc(0);
let greeted = false;
process.stdin.on('data', (chunk) => {
  buffer = Buffer.concat([buffer, chunk]);
  if (!greeted) {
    const newline = buffer.indexOf(10);
    if (newline < 0) return;
    const { token } = JSON.parse(buffer.subarray(0, newline).toString('utf8'));
    authenticated = typeof token === 'string' && token !== '';
    buffer = buffer.subarray(newline + 1);
    greeted = true;
    send(WELCOME, Buffer.from(JSON.stringify({ authenticated })));
  }
  while (buffer.length >= 4) {
    const length = buffer.readUInt32BE(0);
    if (length === 0 || length > MAX_FRAME) throw new Error(`Bad frame length ${length}`);
    if (buffer.length < 4 + length) return;
    const body = buffer.subarray(4, 4 + length);
    buffer = buffer.subarray(4 + length);
    handle(body);
  }
});
process.stdin.on('end', () => process.exit(0));

process.stdout.write(`${JSON.stringify({ server: 'echo-host', version: VERSION })}\n`);
