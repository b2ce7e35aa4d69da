//! Backpressure: a client that stops reading while ZCode streams. The agent keeps what the
//! client has not read bounded (the backlog waits in ZCode's pipe), and once the client reads
//! again it gets every byte, in order, exactly once; a cancel sent while its stdout is full
//! still ends the turn, and the session goes on.
//!
//! The client here reads stdout itself (not the shared driver's background reader, which
//! always reads at once), so "not reading" is real.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};
use support::*;

const DELTA: &str = "lorem ipsum ";

struct SlowClient {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl SlowClient {
    fn start(env: &TestEnv) -> Self {
        let root = env.path();
        let mut child = Command::new(agent_binary())
            .args(simulate_args())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()))
            .env("HOME", root.join("home"))
            .env("XDG_CACHE_HOME", shared_cache_dir())
            .env("XDG_DATA_HOME", root.join("data"))
            .env("XDG_CONFIG_HOME", root.join("home").join(".config"))
            .env("TMPDIR", root.join("tmp"))
            .env("ZCODE_SIM_STATE", env.sim_state())
            .env("ZCODE_ACP_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn zcode-acp");
        let stdin = child.stdin.take().expect("stdin piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout piped"));
        Self { child, stdin, stdout, next_id: 1 }
    }

    fn send(&mut self, frame: Value) {
        writeln!(self.stdin, "{frame}").and_then(|()| self.stdin.flush()).expect("write stdin");
    }

    fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn next_frame(&mut self) -> Value {
        let mut line = String::new();
        let read = self.stdout.read_line(&mut line).expect("read stdout");
        assert!(read > 0, "zcode-acp closed its stdout");
        serde_json::from_str(&line).expect("every stdout line is JSON")
    }

    /// Reads up to the response to `id`: (the frames before it, the response).
    fn until_response(&mut self, id: u64) -> (Vec<Value>, Value) {
        let (before, [response]) = self.until_responses([id]);
        (before, response)
    }

    /// Reads until every request of `ids` is answered: (the other frames, the responses in the
    /// order of `ids`). JSON-RPC answers requests in any order, so neither is assumed.
    fn until_responses<const N: usize>(&mut self, ids: [u64; N]) -> (Vec<Value>, [Value; N]) {
        let mut others = Vec::new();
        let mut responses = [const { None }; N];
        while responses.iter().any(Option::is_none) {
            let frame = self.next_frame();
            let answers =
                ids.iter().position(|id| frame.get("method").is_none() && frame["id"] == *id);
            match answers {
                Some(index) => {
                    assert!(responses[index].is_none(), "request {} answered twice", ids[index]);
                    responses[index] = Some(frame);
                }
                None => others.push(frame),
            }
        }
        (others, responses.map(|response| response.expect("every id was answered")))
    }

    fn session(&mut self, env: &TestEnv) -> String {
        let id = self.request("initialize", initialize_params(plain_client()));
        self.until_response(id);
        let cwd = env.workspace("ws");
        let id = self.request("session/new", json!({"cwd": cwd, "mcpServers": []}));
        let (_, response) = self.until_response(id);
        response["result"]["sessionId"].as_str().expect("a session id").to_string()
    }

    fn finish(mut self) {
        drop(self.stdin);
        // Whatever is left is read (and dropped) so the agent can exit.
        let mut rest = Vec::new();
        let _ = std::io::Read::read_to_end(&mut self.stdout, &mut rest);
        assert!(self.child.wait().expect("wait").success());
    }
}

fn chunks_of<'a>(frames: &'a [Value], session: &str) -> impl Iterator<Item = &'a Value> {
    frames.iter().filter(move |f| {
        f["method"] == "session/update"
            && f["params"]["sessionId"] == session
            && f["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    })
}

/// The text of the turn's message chunks, checked to be whole deltas.
fn streamed_text(frames: &[Value], session: &str) -> String {
    let text: String = chunks_of(frames, session)
        .map(|f| f["params"]["update"]["content"]["text"].as_str().expect("text"))
        .collect();
    assert_eq!(text.len() % DELTA.len(), 0, "a cut delta");
    assert_eq!(text, DELTA.repeat(text.len() / DELTA.len()), "bytes lost or reordered");
    text
}

/// Reads until the first message chunk of the turn, then not at all while `act` runs.
fn stop_reading_after_first_chunk(client: &mut SlowClient, session: &str) -> Vec<Value> {
    let mut frames = Vec::new();
    loop {
        let frame = client.next_frame();
        let first = chunks_of(std::slice::from_ref(&frame), session).next().is_some();
        frames.push(frame);
        if first {
            return frames;
        }
    }
}

#[test]
fn a_client_that_stops_reading_gets_every_byte_in_order_once_it_reads_again() {
    let env = TestEnv::new();
    let mut client = SlowClient::start(&env);
    let session = client.session(&env);
    // ~7 MB of ACP frames: far more than the pipe and every queue of the agent hold.
    let deltas = 30_000;
    let id =
        client.request("session/prompt", text_prompt(&session, &format!("sim:stream {deltas}")));
    let mut frames = stop_reading_after_first_chunk(&mut client, &session);
    // A second request behind the backlog, answered too once the client reads again. Its
    // answer comes near the turn's end, before or after the prompt's: both orders are JSON-RPC
    // (reading for the list's first once took the prompt's answer with it, and the test hung
    // waiting for it; docs/reliability.md F-43).
    let list = client.request("session/list", json!({"cwd": env.workspace("ws")}));
    let (rest, [listed, response]) = client.until_responses([list, id]);
    assert!(listed.get("result").is_some(), "{listed}");
    frames.extend(rest);
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(streamed_text(&frames, &session), DELTA.repeat(deltas));
    client.finish();
}

#[test]
fn a_cancel_sent_while_the_agents_stdout_is_full_ends_the_turn_and_the_session_goes_on() {
    let env = TestEnv::new();
    let mut client = SlowClient::start(&env);
    let session = client.session(&env);
    // ~46 MB of ACP frames: the turn cannot end on its own while the client is not reading.
    let id = client.request("session/prompt", text_prompt(&session, "sim:stream 200000"));
    let mut frames = stop_reading_after_first_chunk(&mut client, &session);
    client.send(
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
    );
    let (rest, response) = client.until_response(id);
    frames.extend(rest);
    assert_eq!(response["result"]["stopReason"], "cancelled", "{response}");
    let text = streamed_text(&frames, &session);
    assert!(text.len() < DELTA.len() * 200_000, "the turn was not cut short");

    // Nothing of the cancelled turn arrives later, and the next turn is whole.
    let next = client.request("session/prompt", text_prompt(&session, "sim:stream 10"));
    let (frames, response) = client.until_response(next);
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(streamed_text(&frames, &session), DELTA.repeat(10));
    assert!(
        frames.iter().all(|f| f.get("id").is_none() || f["id"] != id),
        "the cancelled prompt was answered twice"
    );
    client.finish();
}
