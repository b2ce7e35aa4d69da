//! Every kind of mapper call of the 0.2 contract, recorded through a small echoing mapper:
//! results pass through unchanged, and the recording — redacted or not — replays green, with no
//! secret left in it when redacted. (The real mapper's traces are recorded in
//! `golden_recordings.rs`.)

use std::fs;
use std::sync::Arc;

use serde_json::{Value, json};
use zcode_contract::*;
use zcode_golden as golden;
use zcode_recorder::{Recorder, Redaction};

const SECRET: &str = "SECRET-5d1e";

/// Echoes what it is given into its results, so redaction shows in them.
struct Echo(Contract);

struct EchoConnection {
    partial: Vec<u8>,
    identity: Option<String>,
}

struct EchoSession {
    asked: u32,
}

impl Echo {
    fn new() -> Self {
        Echo(Contract {
            facts: Default::default(),
            protocol_id: "echo".into(),
            description: String::new(),
            layouts: vec![],
            releases: vec![],
            cli_version_probe: VersionProbe { args: vec![], env: vec![] },
            credentials_file: String::new(),
            credential_sources: vec![],
            offers: vec![],
        })
    }
}

impl Mapper for Echo {
    fn source(&self) -> &str {
        "embedded:echo"
    }
    fn contract(&self) -> &Contract {
        &self.0
    }
    fn launch_plan(&self, _: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
        Ok(LaunchPlan::default())
    }
    fn auth_plan(&self, _: &VerifiedInstall, _: AuthCommand) -> Result<LaunchPlan, MapperError> {
        Ok(LaunchPlan::default())
    }
    fn connection(&self) -> Result<Box<dyn MapperConnection>, MapperFault> {
        Ok(Box::new(EchoConnection { partial: Vec::new(), identity: None }))
    }
    fn session(&self, _: &SessionInit) -> Result<Box<dyn MapperSession>, MapperFault> {
        Ok(Box::new(EchoSession { asked: 0 }))
    }
}

fn done(response: Value) -> Step {
    Step::Done(Ok(OpResult { response: response.to_string(), updates: vec![] }))
}

impl MapperConnection for EchoConnection {
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        self.partial.extend_from_slice(bytes);
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else { return Ok(vec![]) };
        let rest = self.partial.split_off(end + 1);
        let complete = std::mem::replace(&mut self.partial, rest);
        let mut inbound = Vec::new();
        for line in complete.split(|&b| b == b'\n').filter(|line| !line.is_empty()) {
            let Ok(value) = serde_json::from_slice::<Value>(line) else {
                inbound.push(Inbound::Ignored("not JSON".into()));
                continue;
            };
            if let Some(hello) = value.get("hello").and_then(Value::as_str) {
                self.identity = Some(format!("echo {}", hello.len()));
                inbound.push(Inbound::Write(NativeWrite::new("ack", b"ack\n".to_vec())));
                continue;
            }
            let route = value["route"].as_str().unwrap_or_default().to_string();
            let payload = NativeData::Text(value["payload"].to_string());
            inbound.push(Inbound::Event(RoutedEvent { route, payload }));
        }
        Ok(inbound)
    }
    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        Ok(vec![Inbound::Ignored(format!("{} bytes left", self.partial.len()))])
    }
    fn identity(&mut self) -> Result<Option<String>, MapperFault> {
        Ok(self.identity.clone())
    }
}

impl Operations<ConnectionOp> for EchoConnection {
    fn start(&mut self, _: u64, op: &ConnectionOp, first: u64) -> Result<Step, MapperFault> {
        Ok(match op {
            ConnectionOp::Setup => Step::Wait(Outgoing {
                requests: vec![NativeRequest {
                    id: first,
                    bytes: b"{\"hello\":true}\n".to_vec(),
                    label: "hello".into(),
                    timeout_ms: 100,
                }],
                ..Outgoing::default()
            }),
            other => done(json!({ "op": other.name() })),
        })
    }
    fn resume(&mut self, _: u64, reply: Option<&NativeReply>, _: u64) -> Result<Step, MapperFault> {
        Ok(done(json!({ "replied": reply.is_some() })))
    }
}

impl Operations<SessionOp> for EchoSession {
    fn start(&mut self, _: u64, op: &SessionOp, first: u64) -> Result<Step, MapperFault> {
        let SessionOp::Prompt(params) = op else { return Ok(done(json!({}))) };
        let params: Value = serde_json::from_str(params).unwrap_or_default();
        let line = json!({ "send": params["prompt"][0]["text"] });
        Ok(Step::Wait(Outgoing {
            updates: vec![
                json!({ "sessionUpdate": "user_message_chunk", "echo": params }).to_string(),
            ],
            requests: vec![NativeRequest {
                id: first,
                bytes: format!("{line}\n").into_bytes(),
                label: "prompt".into(),
                timeout_ms: 100,
            }],
            ..Outgoing::default()
        }))
    }
    fn resume(&mut self, _: u64, reply: Option<&NativeReply>, _: u64) -> Result<Step, MapperFault> {
        Ok(match reply {
            None => done(json!({ "resumed": "without a reply" })),
            Some(NativeReply { body: ReplyBody::Ok(NativeData::Text(text)), .. }) => {
                Step::Wait(Outgoing { updates: vec![text.clone()], ..Outgoing::default() })
            }
            Some(other) => done(json!({ "other": format!("{:?}", other.body) })),
        })
    }
}

impl MapperSession for EchoSession {
    fn map(&mut self, inputs: Vec<SessionInput>) -> Result<Effects, MapperFault> {
        let mut effects = Effects::default();
        for input in &inputs {
            let update = match input {
                SessionInput::Event(NativeData::Text(text)) if text.contains("\"ask\"") => {
                    self.asked += 1;
                    effects.requests += 1;
                    continue;
                }
                SessionInput::Event(NativeData::Text(text)) => {
                    json!({ "sessionUpdate": "agent_message_chunk", "echo": text })
                }
                SessionInput::Event(NativeData::Binary(bytes)) => {
                    json!({ "sessionUpdate": "agent_message_chunk", "bytes": bytes.len() })
                }
                SessionInput::Reply(reply) => json!({ "sessionUpdate": "x", "reply": reply.id }),
            };
            effects.actions.push(Action::Update(update.to_string()));
        }
        if effects.requests > 0 {
            effects.writes.push(NativeWrite {
                bytes: b"{\"token\":\"@@T@@\"}\n".to_vec(),
                label: "credential".into(),
                secret: Some(SecretFill {
                    placeholder: "@@T@@".into(),
                    source: "token".into(),
                    args: vec![],
                    fallback: b"{\"token\":null}\n".to_vec(),
                }),
            });
        }
        Ok(effects)
    }
    fn issue(&mut self, first: u64) -> Result<Outgoing, MapperFault> {
        let requests = (0..u64::from(std::mem::take(&mut self.asked)))
            .map(|i| NativeRequest {
                id: first + i,
                bytes: b"{\"resync\":true}\n".to_vec(),
                label: "resync".into(),
                timeout_ms: 0,
            })
            .collect();
        Ok(Outgoing { requests, ..Outgoing::default() })
    }
}

/// Drives one connection and one session through every kind of call; returns the results as
/// the core saw them, so a recording run can be compared with a plain one.
fn drive(mapper: &dyn Mapper) -> Vec<String> {
    let mut seen = Vec::new();
    let mut connection = mapper.connection().unwrap();
    let frame = json!({ "route": "r", "payload": { "text": format!("hi {SECRET}") } });
    seen.push(format!("{:?}", connection.push(b"{\"hello\":\"there\"}\n{\"route\"")));
    seen.push(format!(
        "{:?}",
        connection.push(format!(":\"r\",\"payload\":1}}\n{frame}\n").as_bytes())
    ));
    seen.push(format!("{:?}", connection.start(1, &ConnectionOp::Setup, 1)));
    let hello = NativeReply { id: 1, body: ReplyBody::Ok(NativeData::Text("{}".into())) };
    seen.push(format!("{:?}", connection.resume(1, Some(&hello), 2)));
    seen.push(format!("{:?}", connection.identity()));
    seen.push(format!("{:?}", connection.push(b"tail without newline")));
    seen.push(format!("{:?}", connection.finish()));

    let init = SessionInit {
        facts: Default::default(),
        workspace: format!("/home/{SECRET}/work"),
        client: ClientFeatures::default(),
    };
    let mut session = mapper.session(&init).unwrap();
    let prompt = json!({ "prompt": [{ "type": "text", "text": format!("fix it {SECRET}") }] });
    seen.push(format!("{:?}", session.start(2, &SessionOp::Prompt(prompt.to_string()), 3)));
    let reply = NativeReply {
        id: 3,
        body: ReplyBody::Ok(NativeData::Text(json!({ "accepted": SECRET }).to_string())),
    };
    seen.push(format!("{:?}", session.resume(2, Some(&reply), 4)));
    seen.push(format!("{:?}", session.resume(2, None, 4)));
    let batch = [
        SessionInput::Event(NativeData::Text(json!({ "delta": SECRET }).to_string())),
        SessionInput::Event(NativeData::Binary(SECRET.as_bytes().to_vec())),
        SessionInput::Event(NativeData::Text("{\"type\":\"ask\"}".into())),
        SessionInput::Reply(NativeReply { id: 9, body: ReplyBody::Lost(SECRET.into()) }),
    ];
    let effects = session.map(batch.to_vec()).unwrap();
    seen.push(format!("{effects:?}"));
    seen.push(format!("{:?}", session.issue(5)));
    seen
}

fn record(redaction: Redaction) -> (String, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("recording.jsonl");
    let recorder = Recorder::create(&path, redaction).unwrap();
    let seen = drive(recorder.wrap(Arc::new(Echo::new())).as_ref());
    (fs::read_to_string(&path).unwrap(), seen)
}

#[test]
fn results_pass_through_the_recorder_unchanged() {
    let plain = drive(&Echo::new());
    assert_eq!(record(Redaction::Redacted).1, plain);
    assert_eq!(record(Redaction::Unredacted).1, plain);
}

#[test]
fn a_redacted_recording_of_every_call_replays_without_the_secret() {
    let (recording, _) = record(Redaction::Redacted);
    assert!(!recording.contains(SECRET), "{recording}");
    let report = golden::replay(&Echo::new(), &recording);
    assert!(report.passed(), "{}\n{recording}", report.render());
    for call in [
        "connection.new",
        "connection.push",
        "connection.start",
        "connection.resume",
        "connection.identity",
        "connection.finish",
        "session.new",
        "session.start",
        "session.resume",
        "session.map",
        "session.issue",
    ] {
        assert!(recording.contains(&format!("{{\"call\":\"{call}\"")), "{call} in {recording}");
    }
    // The binary event became a placeholder, still binary; the resume without a reply has
    // none; the secret fill is carried, with its placeholder.
    assert!(recording.contains("{\"event\":{\"binary\":\""), "{recording}");
    assert!(
        recording.contains(
            "\"call\":\"session.resume\",\"name\":\"s1\",\"opId\":2,\"firstRequestId\":4"
        ),
        "{recording}"
    );
    assert!(recording.contains("\"placeholder\":\"@@T@@\""), "{recording}");
    assert_eq!(report.matched, recording.lines().filter(|l| l.contains("\"expect\"")).count());
}

#[test]
fn an_unredacted_recording_of_every_call_replays_with_everything() {
    let (recording, _) = record(Redaction::Unredacted);
    assert!(recording.contains(SECRET));
    let report = golden::replay(&Echo::new(), &recording);
    assert!(report.passed(), "{}\n{recording}", report.render());
    let calls = recording.lines().filter(|l| l.starts_with('{')).count();
    assert_eq!(report.matched, calls - 2, "every call but the two creations is checked");
}
