//! The native echo mapper against the real echo host (`node host/server.mjs`), with this test
//! playing the core: it fills the credential into the handshake, hands out request ids, writes
//! what the mapper sends, routes events to the session and issues the requests mapping makes.
//! Needs `node` (20 or newer) on PATH.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use echo_v1::EchoMapper;
use serde_json::{Value, json};
use zcode_mapper_sdk::contract::{
    Action, ClientFeatures, ConnectionOp, Inbound, Mapper, MapperConnection, MapperSession,
    NativeReply, NativeWrite, Outgoing, SessionInit, SessionInput, SessionOp, Step, StopReason,
    Terminal,
};

/// Only stops a broken run from hanging; never measures speed.
const HANG_GUARD: Duration = Duration::from_secs(20);

struct Core {
    child: Child,
    stdin: ChildStdin,
    output: Receiver<Vec<u8>>,
    connection: Box<dyn MapperConnection>,
    next_id: u64,
    /// Input for the session, in arrival order.
    queued: Vec<SessionInput>,
    replies: Vec<NativeReply>,
    authenticated_write: Option<Vec<u8>>,
}

impl Core {
    fn start(token: Option<&str>) -> Core {
        let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("host/server.mjs");
        let mut child = Command::new("node")
            .arg(&server)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("node runs the echo host");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (sender, output) = channel();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(n @ 1..) = stdout.read(&mut buffer) {
                if sender.send(buffer[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        let connection = EchoMapper.connection().unwrap();
        let mut core = Core {
            child,
            stdin,
            output,
            connection,
            next_id: 1,
            queued: Vec::new(),
            replies: Vec::new(),
            authenticated_write: None,
        };
        loop {
            let inbound = core.read();
            if let Some(write) = inbound.iter().find_map(|i| match i {
                Inbound::Write(write) => Some(write.clone()),
                _ => None,
            }) {
                core.write_filled(&write, token);
            }
            if inbound.contains(&Inbound::Ready) {
                return core;
            }
        }
    }

    /// What the core does with a secret fill: the value JSON-escaped in place of the
    /// placeholder, or the fallback without one.
    fn write_filled(&mut self, write: &NativeWrite, token: Option<&str>) {
        let fill = write.secret.as_ref().expect("the handshake carries the token");
        let bytes = match token {
            Some(token) => {
                let text = String::from_utf8(write.bytes.clone()).unwrap();
                let escaped = serde_json::to_string(token).unwrap();
                let quoted = format!("\"{}\"", fill.placeholder);
                assert_eq!(text.matches(&quoted).count(), 1);
                text.replace(&quoted, &escaped).into_bytes()
            }
            None => fill.fallback.clone(),
        };
        self.authenticated_write = Some(bytes.clone());
        self.stdin.write_all(&bytes).unwrap();
    }

    fn read(&mut self) -> Vec<Inbound> {
        let bytes = self.output.recv_timeout(HANG_GUARD).expect("the echo host answers");
        let inbound = self.connection.push(&bytes).expect("frames decode");
        for item in &inbound {
            match item {
                Inbound::Reply(reply) => self.replies.push(reply.clone()),
                Inbound::Event(event) => {
                    self.queued.push(SessionInput::Event(event.payload.clone()))
                }
                _ => {}
            }
        }
        inbound
    }

    fn send(&mut self, outgoing: &Outgoing) {
        for write in &outgoing.writes {
            self.stdin.write_all(&write.bytes).unwrap();
        }
        for request in &outgoing.requests {
            self.stdin.write_all(&request.bytes).unwrap();
        }
    }

    fn reply(&mut self, id: u64) -> NativeReply {
        loop {
            if let Some(at) = self.replies.iter().position(|r| r.id == id) {
                return self.replies.remove(at);
            }
            self.read();
        }
    }

    fn connection_op(&mut self, op: ConnectionOp) -> Value {
        drive(self, &mut |core, call, next| match call {
            Call::Start => core.connection.start(1, &op, next).unwrap(),
            Call::Resume(reply) => core.connection.resume(1, reply, next).unwrap(),
        })
        .0
    }

    /// Maps session input until a terminal action, issuing what mapping asks for.
    fn until_terminal(&mut self, session: &mut dyn MapperSession) -> Vec<Action> {
        let mut actions = Vec::new();
        loop {
            let inputs = std::mem::take(&mut self.queued);
            let inputs: Vec<SessionInput> = inputs
                .into_iter()
                .chain(std::mem::take(&mut self.replies).into_iter().map(SessionInput::Reply))
                .collect();
            if !inputs.is_empty() {
                let effects = session.map(inputs).unwrap();
                for write in &effects.writes {
                    self.stdin.write_all(&write.bytes).unwrap();
                }
                if effects.requests > 0 {
                    let issued = session.issue(self.next_id).unwrap();
                    assert_eq!(issued.requests.len() as u32, effects.requests);
                    self.next_id += u64::from(effects.requests);
                    self.send(&issued);
                }
                let done = effects.actions.iter().any(|a| matches!(a, Action::Terminal(_)));
                actions.extend(effects.actions);
                if done {
                    return actions;
                }
            }
            self.read();
        }
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

enum Call<'a> {
    Start,
    Resume(Option<&'a NativeReply>),
}

/// Runs an operation to its end, as the core does; returns the response and the updates it
/// streamed on the way.
fn drive(
    core: &mut Core,
    call: &mut dyn FnMut(&mut Core, Call<'_>, u64) -> Step,
) -> (Value, Vec<Value>) {
    let mut step = call(core, Call::Start, core.next_id);
    let mut streamed = Vec::new();
    loop {
        let outgoing = match step {
            Step::Done(result) => {
                let result = result.expect("the operation succeeds");
                return (serde_json::from_str(&result.response).unwrap(), streamed);
            }
            Step::Wait(outgoing) => outgoing,
        };
        streamed.extend(outgoing.updates.iter().map(|u| serde_json::from_str::<Value>(u).unwrap()));
        core.next_id += outgoing.requests.len() as u64;
        core.send(&outgoing);
        let next = core.next_id;
        step = match outgoing.requests.iter().find(|r| r.timeout_ms != 0) {
            Some(request) => {
                let reply = core.reply(request.id);
                call(core, Call::Resume(Some(&reply)), next)
            }
            None => call(core, Call::Resume(None), next),
        };
    }
}

fn session_op(
    core: &mut Core,
    session: &mut dyn MapperSession,
    op_id: u64,
    op: SessionOp,
) -> (Value, Vec<Value>) {
    drive(core, &mut |_, call, next| match call {
        Call::Start => session.start(op_id, &op, next).unwrap(),
        Call::Resume(reply) => session.resume(op_id, reply, next).unwrap(),
    })
}

fn texts(actions: &[Action]) -> String {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Update(update) => {
                let update: Value = serde_json::from_str(update).unwrap();
                update["content"]["text"].as_str().map(str::to_string)
            }
            _ => None,
        })
        .collect()
}

fn prompt(text: &str) -> SessionOp {
    SessionOp::Prompt(
        json!({"sessionId": "echo-1", "prompt": [{"type": "text", "text": text}]}).to_string(),
    )
}

#[test]
fn a_session_through_the_real_host() {
    let mut core = Core::start(Some("secret \"token\""));
    assert_eq!(core.connection.identity().unwrap().as_deref(), Some("echo-host/1.0.0"));
    assert_eq!(
        core.authenticated_write.as_deref(),
        Some(&b"{\"token\":\"secret \\\"token\\\"\"}\n"[..])
    );
    assert_eq!(core.connection_op(ConnectionOp::Setup), json!({}));
    assert_eq!(
        core.connection_op(ConnectionOp::Probe(
            zcode_mapper_sdk::contract::ProbeRequest::workspace("/w")
        ))["authenticated"],
        true
    );

    let init = SessionInit {
        facts: Default::default(),
        workspace: "/w".into(),
        client: ClientFeatures::default(),
    };
    let mut session = EchoMapper.session(&init).unwrap();
    let create = SessionOp::Create(json!({"cwd": "/w", "mcpServers": []}).to_string());
    assert_eq!(
        session_op(&mut core, session.as_mut(), 1, create).0,
        json!({"sessionId": "echo-1"})
    );

    session_op(&mut core, session.as_mut(), 2, prompt("hello echo world"));
    let turn = core.until_terminal(session.as_mut());
    assert_eq!(texts(&turn), "hello echo world");
    assert_eq!(turn.last(), Some(&Action::Terminal(Terminal::Stop(StopReason::EndTurn))));

    // The host drops an event: the mapper asks for it from mapping and keeps the order.
    session_op(&mut core, session.as_mut(), 3, prompt("one two three [gap]"));
    let turn = core.until_terminal(session.as_mut());
    assert_eq!(texts(&turn), "one two three [gap]");

    // The host asks mid-turn and waits: the answer is an untracked write.
    session_op(&mut core, session.as_mut(), 4, prompt("[ping] me"));
    let turn = core.until_terminal(session.as_mut());
    assert_eq!(turn.last(), Some(&Action::Terminal(Terminal::Stop(StopReason::EndTurn))));

    let listed = core.connection_op(ConnectionOp::ListSessions(json!({"cwd": "/w"}).to_string()));
    assert_eq!(listed["sessions"][0]["title"], "hello echo world");
    session_op(&mut core, session.as_mut(), 5, SessionOp::Close);

    // A fresh session resource loads the history, streamed before the load is done.
    let mut loaded = EchoMapper.session(&init).unwrap();
    let load =
        SessionOp::Load(json!({"cwd": "/w", "sessionId": "echo-1", "mcpServers": []}).to_string());
    let (response, streamed) = session_op(&mut core, loaded.as_mut(), 1, load);
    assert_eq!(response, json!({}));
    let kinds: Vec<&str> = streamed.iter().map(|u| u["sessionUpdate"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["user_message_chunk", "agent_message_chunk"].repeat(3));
    assert_eq!(streamed[1]["content"]["text"], "hello echo world");
}

#[test]
fn without_a_token_the_host_serves_anonymously() {
    let mut core = Core::start(None);
    assert_eq!(core.authenticated_write.as_deref(), Some(&b"{\"token\":null}\n"[..]));
    assert_eq!(
        core.connection_op(ConnectionOp::Probe(
            zcode_mapper_sdk::contract::ProbeRequest::workspace("/w")
        ))["authenticated"],
        false
    );
}
