//! Test harness for the Services Server: a throwaway runtime root, the simulator run as that
//! root's Node over real pipes, and a client that speaks the hello and the binary IPC with its
//! own codec.
#![allow(dead_code)] // Each test crate uses a different part of the harness.

pub mod codec;
pub mod mirror;

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use codec::{Incoming, Reader, Val, frame, message};
use mirror::{Applied, Mirror, MirrorFault};
use serde_json::{Value, json};

/// Hang guard only: no assertion depends on timing.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// A zcode-runtime root laid out as the simulator expects, plus a workspace, state and home.
pub struct Runtime {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub workspace: PathBuf,
    pub state: PathBuf,
    pub home: PathBuf,
}

impl Runtime {
    pub fn new(version: &str) -> Runtime {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("runtime");
        let zcode = root.join("zcode");
        for sub in ["server/remote", "agent/provider"] {
            std::fs::create_dir_all(zcode.join(sub)).unwrap();
        }
        std::fs::create_dir_all(root.join("node/bin")).unwrap();
        std::fs::write(
            zcode.join("package.json"),
            json!({"name": "zcode-runtime", "version": version}).to_string(),
        )
        .unwrap();
        std::fs::write(zcode.join("server/remote/zcode-server.cjs"), "// services server\n")
            .unwrap();
        std::fs::write(zcode.join("agent/zcode.cjs"), "// agent\n").unwrap();
        std::fs::write(zcode.join("agent/provider/zcode-builtin.json"), "{}\n").unwrap();
        std::fs::write(root.join("node/bin/node"), "#!/bin/sh\n").unwrap();
        let (workspace, state, home) =
            (base.join("workspace"), base.join("state"), base.join("home"));
        for dir in [&workspace, &state, &home] {
            std::fs::create_dir_all(dir).unwrap();
        }
        Runtime { _dir: dir, root, workspace, state, home }
    }

    pub fn ws(&self) -> String {
        self.workspace.to_str().unwrap().to_owned()
    }

    pub fn server_entry(&self) -> String {
        self.root.join("zcode/server/remote/zcode-server.cjs").to_str().unwrap().to_owned()
    }

    pub fn agent_entry(&self) -> String {
        self.root.join("zcode/agent/zcode.cjs").to_str().unwrap().to_owned()
    }

    /// The simulator as this root's Node, with the launch environment of a real plan.
    pub fn node(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_zcode-sim"));
        command
            .arg("--install-root")
            .arg(&self.root)
            .arg("--")
            .args(args)
            .current_dir(&self.workspace)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("ZCODE_SIM_HOME", &self.home)
            .env("ZCODE_SIM_STATE", &self.state)
            .env("ZCODE_SERVICE_AUTHORITY_MODE", "standalone-server")
            .env("ZCODE_AGENT_SERVER_COMMAND", self.root.join("node/bin/node"))
            .env(
                "ZCODE_AGENT_SERVER_ARGS_JSON",
                json!([self.agent_entry(), "app-server", "--stdio"]).to_string(),
            );
        command
    }

    /// Runs a short command (a version probe) to its end.
    pub fn output(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        remove: &[&str],
    ) -> (ExitStatus, String, String) {
        let mut command = self.node(args);
        for (key, value) in env {
            command.env(key, value);
        }
        for key in remove {
            command.env_remove(key);
        }
        let output = command.output().unwrap();
        (
            output.status,
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// Starts the server and reads its hello (nothing else).
    pub fn spawn(&self, env: &[(&str, &str)]) -> Server {
        let mut command = self.node(&[&self.server_entry()]);
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (sender, receiver) = channel();
        std::thread::spawn(move || {
            let mut chunk = vec![0u8; 1 << 16];
            loop {
                match stdout.read(&mut chunk) {
                    Ok(0) | Err(_) => {
                        let _ = sender.send(None);
                        return;
                    }
                    Ok(count) => {
                        if sender.send(Some(chunk[..count].to_vec())).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let mut server = Server {
            child,
            stdin: Some(stdin),
            bytes: receiver,
            raw: Vec::new(),
            hello: None,
            eof: false,
        };
        server.hello = server.read_line();
        server
    }

    /// Starts the server and completes the handshake through `[200]`.
    pub fn start(&self, env: &[(&str, &str)]) -> Client {
        let mut server = self.spawn(env);
        assert!(server.hello.is_some(), "no hello line");
        server.write(
            format!(
                "{}\n",
                json!({"type": "zcode-hello-ack", "version": "test", "clientId": "sim-tests"})
            )
            .as_bytes(),
        );
        let mut client = Client::new(server);
        client.wait_initialize();
        client
    }
}

/// The raw server process.
pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    bytes: Receiver<Option<Vec<u8>>>,
    /// Bytes read past the hello line, not yet consumed.
    pub raw: Vec<u8>,
    pub hello: Option<Value>,
    eof: bool,
}

impl Server {
    /// Reads until the first newline; `None` if the output ended first.
    fn read_line(&mut self) -> Option<Value> {
        loop {
            if let Some(newline) = self.raw.iter().position(|byte| *byte == b'\n') {
                let line: Vec<u8> = self.raw.drain(..=newline).collect();
                return Some(
                    serde_json::from_slice(&line[..line.len() - 1]).expect("hello is JSON"),
                );
            }
            if !self.pull() {
                return None;
            }
        }
    }

    /// Waits for more output; `false` at its end.
    fn pull(&mut self) -> bool {
        if self.eof {
            return false;
        }
        match self.bytes.recv_timeout(HANG_GUARD) {
            Ok(Some(bytes)) => {
                self.raw.extend(bytes);
                true
            }
            Ok(None) => {
                self.eof = true;
                false
            }
            Err(RecvTimeoutError::Timeout) => panic!("hang guard: no output for {HANG_GUARD:?}"),
            Err(RecvTimeoutError::Disconnected) => {
                self.eof = true;
                false
            }
        }
    }

    /// Whether more output arrives before the output ends, without waiting for the guard.
    pub fn ended_quietly(&mut self) -> bool {
        while self.pull() {
            if !self.raw.is_empty() {
                return false;
            }
        }
        self.raw.is_empty()
    }

    pub fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Writes `bytes` one at a time, each flushed on its own.
    pub fn write_split(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.write(std::slice::from_ref(byte));
        }
    }

    pub fn close_stdin(&mut self) {
        self.stdin.take();
    }

    /// Waits for the process to end; returns its status and stderr.
    pub fn wait(mut self) -> (ExitStatus, String) {
        self.close_stdin();
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let mut stderr = String::new();
                if let Some(mut pipe) = self.child.stderr.take() {
                    let _ = pipe.read_to_string(&mut stderr);
                }
                return (status, stderr);
            }
            assert!(Instant::now() < deadline, "hang guard: the server did not exit");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a call came back with.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Ok(Val),
    Err(Value),
}

impl Reply {
    pub fn ok(self) -> Value {
        match self {
            Reply::Ok(value) => value.json(),
            Reply::Err(error) => panic!("call failed: {error}"),
        }
    }

    pub fn err(self) -> Value {
        match self {
            Reply::Err(error) => error,
            Reply::Ok(value) => panic!("call succeeded: {value:?}"),
        }
    }
}

/// A connected client: calls, listens, and the events that arrived for each listen.
pub struct Client {
    pub server: Server,
    reader: Reader,
    next_id: i64,
    replies: HashMap<i64, Reply>,
    /// How many replies each id got (a reply must come once).
    pub reply_counts: HashMap<i64, usize>,
    events: HashMap<i64, VecDeque<Value>>,
    initialized: bool,
    /// A framing fault seen on the output; nothing after it can be read.
    pub broken: Option<String>,
}

impl Client {
    pub fn new(mut server: Server) -> Client {
        let mut reader = Reader::default();
        reader.push(&std::mem::take(&mut server.raw));
        Client {
            server,
            reader,
            next_id: 0,
            replies: HashMap::new(),
            reply_counts: HashMap::new(),
            events: HashMap::new(),
            initialized: false,
            broken: None,
        }
    }

    /// Reads one more message; `false` when the output ended or broke.
    fn pump(&mut self) -> bool {
        loop {
            match self.reader.next() {
                Ok(Some(incoming)) => {
                    self.route(incoming);
                    return true;
                }
                Ok(None) => {}
                Err(fault) => {
                    self.broken = Some(fault);
                    return false;
                }
            }
            if !self.server.pull() {
                return false;
            }
            let raw = std::mem::take(&mut self.server.raw);
            self.reader.push(&raw);
        }
    }

    fn route(&mut self, incoming: Incoming) {
        match (incoming.kind, incoming.id) {
            (200, _) => self.initialized = true,
            (201, Some(id)) => {
                *self.reply_counts.entry(id).or_default() += 1;
                self.replies.insert(id, Reply::Ok(incoming.body));
            }
            (202 | 203, Some(id)) => {
                *self.reply_counts.entry(id).or_default() += 1;
                self.replies.insert(id, Reply::Err(incoming.body.json()));
            }
            (204, Some(id)) => self.events.entry(id).or_default().push_back(incoming.body.json()),
            other => panic!("unexpected server message {other:?}"),
        }
    }

    pub fn wait_initialize(&mut self) {
        while !self.initialized {
            assert!(self.pump(), "output ended before [200]: {:?}", self.broken);
        }
    }

    pub fn send(&mut self, header: Vec<Val>, body: &Val) {
        let bytes = frame(&message(header, body));
        self.server.write(&bytes);
    }

    /// Sends a call and returns its id without waiting.
    pub fn request(&mut self, channel: &str, method: &str, args: &[Value]) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        let args = Val::List(args.iter().map(Val::from_json).collect());
        self.send(
            vec![
                Val::Int(100),
                Val::Int(id as i32),
                Val::Str(channel.into()),
                Val::Str(method.into()),
            ],
            &args,
        );
        id
    }

    pub fn reply(&mut self, id: i64) -> Reply {
        loop {
            if let Some(reply) = self.replies.remove(&id) {
                return reply;
            }
            assert!(self.pump(), "output ended before the reply to {id}: {:?}", self.broken);
        }
    }

    pub fn call(&mut self, channel: &str, method: &str, args: &[Value]) -> Reply {
        let id = self.request(channel, method, args);
        self.reply(id)
    }

    pub fn agent(&mut self, method: &str, args: &[Value]) -> Reply {
        self.call("zcode-agent", method, args)
    }

    pub fn listen(&mut self, channel: &str, event: &str, arg: &Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(
            vec![
                Val::Int(102),
                Val::Int(id as i32),
                Val::Str(channel.into()),
                Val::Str(event.into()),
            ],
            &Val::from_json(arg),
        );
        id
    }

    pub fn dispose(&mut self, id: i64) {
        self.send(vec![Val::Int(103), Val::Int(id as i32)], &Val::Undefined);
    }

    pub fn cancel(&mut self, id: i64) {
        self.send(vec![Val::Int(101), Val::Int(id as i32)], &Val::Undefined);
    }

    /// The next event of a listen, waiting for it.
    pub fn event(&mut self, listen: i64) -> Value {
        loop {
            if let Some(event) = self.events.get_mut(&listen).and_then(VecDeque::pop_front) {
                return event;
            }
            assert!(self.pump(), "output ended while waiting for an event: {:?}", self.broken);
        }
    }

    /// Events already received for a listen.
    pub fn received(&mut self, listen: i64) -> Vec<Value> {
        self.events.get_mut(&listen).map(|events| events.drain(..).collect()).unwrap_or_default()
    }

    /// Whether a reply for `id` has arrived (without waiting).
    pub fn has_reply(&self, id: i64) -> bool {
        self.reply_counts.contains_key(&id)
    }

    /// Ends the input, then reads to the end of the output; returns the framing fault seen.
    pub fn drain_to_end_after_close(&mut self) -> Option<String> {
        self.server.close_stdin();
        self.drain_to_end()
    }

    /// Reads until the output ends; returns whether it broke on the way.
    pub fn drain_to_end(&mut self) -> Option<String> {
        while self.pump() {}
        self.broken.clone()
    }

    /// The V4 prelude a headless client runs.
    pub fn prelude(&mut self) -> Value {
        let hello = self.agent("helloConversationV4", &[]).ok();
        let client_hello = json!({"kind": "clientHello", "protocolVersion": 3, "clientId": "sim-tests", "appVersion": "1.0.0"});
        assert_eq!(self.agent("initializeConversationV4", &[client_hello]).ok(), Value::Null);
        self.agent(
            "syncAppRuntimePreferences",
            &[json!({"askUserQuestionAutoResolutionEnabled": false})],
        )
        .ok();
        hello
    }
}

/// One open conversation: its listen, subscription and mirror.
pub struct Session {
    pub id: String,
    pub workspace: String,
    pub listen: i64,
    pub mirror: Mirror,
    commands: u64,
}

impl Session {
    /// `createSession`, listen first, then subscribe and apply the initial snapshot.
    pub fn create(client: &mut Client, workspace: &str) -> Session {
        let created = client
            .agent(
                "createSession",
                &[json!({"workspacePath": workspace, "persistence": "deferred", "mcpServers": []})],
            )
            .ok();
        let id = created["session"]["sessionId"].as_str().unwrap().to_owned();
        Session::open(client, workspace, &id)
    }

    pub fn open(client: &mut Client, workspace: &str, id: &str) -> Session {
        let listen = client.listen(
            "zcode-agent",
            "onDynamicConversationFrame",
            &json!({"workspacePath": workspace, "sessionId": id}),
        );
        let ack = client
            .agent(
                "subscribeConversationV4",
                &[json!({"workspacePath": workspace, "sessionId": id})],
            )
            .ok();
        let subscription = ack["ack"]["subscriptionId"].as_str().unwrap();
        let mut session = Session {
            id: id.to_owned(),
            workspace: workspace.to_owned(),
            listen,
            mirror: Mirror::new(id, subscription),
            commands: 0,
        };
        session.pump_until(client, |mirror| !mirror.state.is_null()).expect("initial snapshot");
        session
    }

    pub fn next_command_id(&mut self) -> String {
        self.commands += 1;
        format!("cmd-{}-{}", &self.id[5..13], self.commands)
    }

    /// Sends a command envelope (CAS commands carry the mirror's revision).
    pub fn command(&mut self, client: &mut Client, kind: &str, payload: Value) -> Value {
        let id = self.next_command_id();
        self.command_with_id(client, &id, kind, payload)
    }

    pub fn command_with_id(
        &mut self,
        client: &mut Client,
        id: &str,
        kind: &str,
        payload: Value,
    ) -> Value {
        let revision = self.mirror.state["revision"].clone();
        let envelope = json!({"commandId": id, "clientId": "sim-tests", "sessionId": self.id, "type": kind,
                              "payload": payload, "issuedAt": 1, "baseRevision": revision});
        self.envelope(client, envelope)
    }

    /// A control command under the CAS rule: on `stale`, retry with `revisionAtDecision`
    /// (at most four attempts).
    pub fn control(&mut self, client: &mut Client, kind: &str, payload: Value) -> Value {
        let id = self.next_command_id();
        let mut revision = self.mirror.state["revision"].clone();
        for _ in 0..4 {
            let envelope = json!({"commandId": id, "clientId": "sim-tests", "sessionId": self.id, "type": kind,
                                  "payload": payload, "issuedAt": 1, "baseRevision": revision});
            let ack = self.envelope(client, envelope);
            if ack["status"] != "stale" {
                return ack;
            }
            revision = ack["revisionAtDecision"].clone();
        }
        panic!("{kind} stayed stale");
    }

    pub fn envelope(&mut self, client: &mut Client, envelope: Value) -> Value {
        client
            .agent(
                "sendConversationCommandV4",
                &[json!({"workspacePath": self.workspace, "envelope": envelope})],
            )
            .ok()
    }

    pub fn send_text(&mut self, client: &mut Client, text: &str) -> Value {
        self.command(client, "sendText", json!({"text": text, "requestedDelivery": "startNow"}))
    }

    /// Applies frames until `done` holds; a mirror fault stops it.
    pub fn pump_until(
        &mut self,
        client: &mut Client,
        done: impl Fn(&Mirror) -> bool,
    ) -> Result<(), MirrorFault> {
        loop {
            while let Some(wire) = client.events.get_mut(&self.listen).and_then(VecDeque::pop_front)
            {
                self.mirror.accept(&wire)?;
                if done(&self.mirror) {
                    return Ok(());
                }
            }
            if !self.mirror.state.is_null() && done(&self.mirror) {
                return Ok(());
            }
            assert!(
                client.pump(),
                "output ended while waiting for the conversation: {:?}",
                client.broken
            );
        }
    }

    /// Applies every frame until the output ends.
    pub fn drain(&mut self, client: &mut Client) {
        loop {
            while let Some(wire) = client.events.get_mut(&self.listen).and_then(VecDeque::pop_front)
            {
                self.mirror.accept(&wire).expect("a clean stream");
            }
            if !client.pump() {
                return;
            }
        }
    }

    /// Waits until the interaction of `kind` shows up and returns it.
    pub fn pending(&mut self, client: &mut Client, kind: &str) -> Value {
        self.pump_until(client, |mirror| {
            mirror.state["pendingInteractions"]
                .as_array()
                .is_some_and(|list| list.iter().any(|item| item["kind"] == kind))
        })
        .unwrap();
        let list = self.mirror.state["pendingInteractions"].as_array().unwrap();
        list.iter().find(|item| item["kind"] == kind).unwrap().clone()
    }

    /// Waits for the conversation to settle after a turn that `text` started.
    pub fn until_idle_with(&mut self, client: &mut Client, command_id: &str) {
        let command_id = command_id.to_owned();
        self.pump_until(client, move |mirror| {
            mirror.idle()
                && mirror.any_row("turnHeader", |row| {
                    row["sourceCommandId"] == command_id.as_str() && row["state"] != "running"
                })
        })
        .unwrap();
    }

    /// Sends a prompt and waits for its turn to end; returns the ACK.
    pub fn prompt(&mut self, client: &mut Client, text: &str) -> Value {
        let ack = self.send_text(client, text);
        assert_eq!(ack["status"], "accepted", "{ack}");
        let id = ack["commandId"].as_str().unwrap().to_owned();
        self.until_idle_with(client, &id);
        ack
    }

    /// The last assistant text.
    pub fn reply_text(&self) -> String {
        self.mirror
            .rows("assistantText")
            .last()
            .map(|row| row["text"].as_str().unwrap().to_owned())
            .unwrap_or_default()
    }

    /// Resubscribes from scratch (what a client does after a fault).
    pub fn resync(&mut self, client: &mut Client) -> Value {
        self.mirror.reset();
        let ack = client
            .agent("resyncConversationV4", &[json!({"workspacePath": self.workspace, "subscriptionId": self.mirror.subscription,
                                                     "base": null, "forceSnapshot": true})])
            .ok();
        self.pump_until(client, |mirror| !mirror.state.is_null()).unwrap();
        ack
    }

    /// Every row of the conversation, paged backwards with `conversationRowsRangeV4`.
    pub fn all_rows(&self, client: &mut Client, limit: u64) -> (Vec<Value>, usize) {
        let mut rows: Vec<Value> = Vec::new();
        let mut before: Option<Value> = None;
        let mut pages = 0;
        loop {
            let mut params =
                json!({"workspacePath": self.workspace, "sessionId": self.id, "limit": limit});
            if let Some(before) = &before {
                params["beforeRowId"] = before.clone();
            }
            let page = client.agent("conversationRowsRangeV4", &[params]).ok();
            pages += 1;
            let mut batch = page["rows"].as_array().unwrap().clone();
            let has_more = page["hasMore"] == true;
            before = batch.first().map(|row| row["rowId"].clone());
            batch.extend(rows);
            rows = batch;
            if !has_more {
                return (rows, pages);
            }
        }
    }
}

/// Applies one wire frame outside a session helper.
pub fn apply(mirror: &mut Mirror, wire: &Value) -> Result<Applied, MirrorFault> {
    mirror.accept(wire)
}
