//! One echo host process: the handshake, the frames it sends, and the connection-level
//! operations (the doctor probe and session listing).
//!
//! The host speaks first: `{"server":"echo-host","version":...}` on one line. The mapper
//! answers with its token on one line — written by the core, which fills in the credential
//! the mapper never sees — and the host's `welcome` frame makes the connection ready.

use serde_json::{Value, json};
use zcode_mapper_sdk::contract::{
    ConnectionOp, ErrorKind, Inbound, MapperError, NativeData, NativeReply, NativeWrite, Outgoing,
    ReplyBody, RoutedEvent, SecretFill, Step,
};
use zcode_mapper_sdk::json::{Fields, internal, invalid_params, parse, protocol};
use zcode_mapper_sdk::ops::{Pending, done, reply_json};

use crate::contract::TOKEN_SOURCE;
use crate::wire::{EVENT, Frames, REPLY, Reader, WELCOME, request};

/// The placeholder the core replaces with the token (inside a JSON string, exactly once).
const TOKEN_PLACEHOLDER: &str = "@@ECHO_TOKEN@@";
/// Longest handshake line.
const MAX_HELLO: usize = 64 * 1024;

#[derive(PartialEq)]
enum Phase {
    Hello,
    Welcome,
    Ready,
}

enum Stage {
    Probe,
    List { cwd: String },
}

pub struct Connection {
    phase: Phase,
    frames: Frames,
    identity: Option<String>,
    pending: Pending<Stage>,
}

impl Default for Connection {
    fn default() -> Self {
        Self {
            phase: Phase::Hello,
            frames: Frames::default(),
            identity: None,
            pending: Pending::default(),
        }
    }
}

impl zcode_mapper_sdk::Connection for Connection {
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        self.frames.push(bytes);
        let mut inbound = Vec::new();
        if self.phase == Phase::Hello {
            match self.frames.take_line() {
                Some(line) => inbound.push(self.hello(&line)?),
                None if self.frames.pending() > MAX_HELLO => {
                    return Err(protocol("The echo host's hello is too long"));
                }
                None => return Ok(inbound),
            }
        }
        while let Some(body) = self.frames.next_frame()? {
            inbound.push(self.frame(&body)?);
        }
        Ok(inbound)
    }

    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        match self.frames.pending() {
            0 => Ok(Vec::new()),
            n => Err(protocol(format!("The echo host stopped inside a frame ({n} bytes left)"))),
        }
    }

    fn identity(&self) -> Option<String> {
        self.identity.clone()
    }

    fn start(&mut self, op_id: u64, op: &ConnectionOp, first_request_id: u64) -> Step {
        let sent = self.pending.check_new(op_id).and_then(|()| match op {
            ConnectionOp::Setup => Ok(done(&json!({}), Vec::new())),
            ConnectionOp::Probe(_) => {
                let status = request(first_request_id, "echo.status", "status", json!({}), 5_000);
                Ok(self.send(op_id, Stage::Probe, status))
            }
            ConnectionOp::ListSessions(params) => {
                let params = parse(params, ErrorKind::InvalidParams, "session/list params")?;
                let fields = Fields::acp(&params, "session/list params")?;
                if fields.opt_str("cursor")?.is_some() {
                    return Err(invalid_params("The echo host lists every session on one page"));
                }
                let cwd = fields.non_empty_str("cwd")?.to_string();
                let list =
                    request(first_request_id, "echo.list", "list", json!({"cwd": cwd}), 5_000);
                Ok(self.send(op_id, Stage::List { cwd }, list))
            }
        });
        sent.unwrap_or_else(|problem| Step::Done(Err(problem)))
    }

    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, _first_request_id: u64) -> Step {
        let finished = self.pending.resume(op_id, reply).and_then(|resumed| {
            let (reply, label) =
                resumed.reply.ok_or_else(|| internal("Echo operations await replies"))?;
            let result = reply_json(reply, "The echo host", &label)?;
            match resumed.stage {
                Stage::Probe => Ok(done(&result, Vec::new())),
                Stage::List { cwd } => {
                    Ok(done(&json!({"sessions": sessions(&result, &cwd)?}), Vec::new()))
                }
            }
        });
        finished.unwrap_or_else(|problem| Step::Done(Err(problem)))
    }
}

impl Connection {
    fn hello(&mut self, line: &[u8]) -> Result<Inbound, MapperError> {
        let text = std::str::from_utf8(line).map_err(|_| protocol("Echo hello is not UTF-8"))?;
        let hello = parse(text, ErrorKind::Protocol, "Echo hello")?;
        let fields = Fields::native(&hello, "Echo hello")?;
        fields.only(&["server", "version"])?;
        let server = fields.non_empty_str("server")?;
        self.identity = Some(format!("{server}/{}", fields.non_empty_str("version")?));
        self.phase = Phase::Welcome;
        let line = |token: Value| format!("{}\n", json!({"token": token})).into_bytes();
        Ok(Inbound::Write(NativeWrite {
            bytes: line(json!(TOKEN_PLACEHOLDER)),
            label: "echo.auth".to_string(),
            secret: Some(SecretFill {
                placeholder: TOKEN_PLACEHOLDER.to_string(),
                source: TOKEN_SOURCE.to_string(),
                args: Vec::new(),
                // No token: the host serves anonymously and says so in `welcome`.
                fallback: line(Value::Null),
            }),
        }))
    }

    fn frame(&mut self, body: &[u8]) -> Result<Inbound, MapperError> {
        let mut reader = Reader(body);
        match (reader.u8()?, &self.phase) {
            (WELCOME, Phase::Welcome) => {
                self.phase = Phase::Ready;
                Ok(Inbound::Ready)
            }
            (REPLY, Phase::Ready) => {
                let id = reader.u64()?;
                let failed = reader.u8()? != 0;
                let text = std::str::from_utf8(reader.rest())
                    .map_err(|_| protocol("Echo reply is not UTF-8"))?;
                let body = if failed {
                    let error = parse(text, ErrorKind::Protocol, "Echo error")?;
                    let message = Fields::native(&error, "Echo error")?.non_empty_str("message")?;
                    ReplyBody::Error(MapperError::new(ErrorKind::Native, message))
                } else {
                    ReplyBody::Ok(NativeData::Text(text.to_string()))
                };
                Ok(Inbound::Reply(NativeReply { id, body }))
            }
            (EVENT, Phase::Ready) => {
                let length = usize::from(reader.u8()?);
                let route = String::from_utf8(reader.take(length)?.to_vec())
                    .map_err(|_| protocol("Echo event route is not UTF-8"))?;
                let payload = NativeData::Binary(reader.rest().to_vec());
                Ok(Inbound::Event(RoutedEvent { route, payload }))
            }
            (kind, _) => Err(protocol(format!("Unexpected echo frame kind {kind:#04x}"))),
        }
    }

    fn send(
        &mut self,
        op_id: u64,
        stage: Stage,
        request: zcode_mapper_sdk::contract::NativeRequest,
    ) -> Step {
        self.pending.wait(op_id, stage, Outgoing { requests: vec![request], ..Outgoing::default() })
    }
}

/// `{sessions: [{sessionId, title}]}` as ACP `SessionInfo` objects.
fn sessions(result: &Value, cwd: &str) -> Result<Vec<Value>, MapperError> {
    let fields = Fields::native(result, "echo list result")?;
    fields
        .array("sessions")?
        .iter()
        .map(|session| {
            let session = Fields::native(session, "echo session")?;
            Ok(json!({"sessionId": session.non_empty_str("sessionId")?, "cwd": cwd, "title": session.str("title")?}))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use zcode_mapper_sdk::Connection as _;

    use crate::wire;

    use super::*;

    fn reply_frame(id: u64, failed: bool, json: &str) -> Vec<u8> {
        let mut body = vec![REPLY];
        body.extend_from_slice(&id.to_be_bytes());
        body.push(u8::from(failed));
        body.extend_from_slice(json.as_bytes());
        [&(body.len() as u32).to_be_bytes()[..], &body].concat()
    }

    fn ready() -> Connection {
        let mut connection = Connection::default();
        connection.push(b"{\"server\":\"echo-host\",\"version\":\"1.0.0\"}\n").unwrap();
        assert_eq!(connection.push(&[0, 0, 0, 3, WELCOME, b'{', b'}']).unwrap(), [Inbound::Ready]);
        connection
    }

    #[test]
    fn answers_the_hello_with_a_token_the_core_fills_in() {
        let mut connection = Connection::default();
        assert_eq!(connection.push(b"{\"server\":\"echo-host\",").unwrap(), []);
        let inbound = connection.push(b"\"version\":\"1.0.0\"}\n\0\0\0\x03\x81{}").unwrap();
        let [Inbound::Write(write), Inbound::Ready] = inbound.as_slice() else {
            panic!("{inbound:?}")
        };
        assert_eq!(write.bytes, b"{\"token\":\"@@ECHO_TOKEN@@\"}\n");
        let secret = write.secret.as_ref().unwrap();
        assert_eq!(
            (secret.placeholder.as_str(), secret.source.as_str()),
            ("@@ECHO_TOKEN@@", "echo-token")
        );
        assert_eq!(secret.fallback, b"{\"token\":null}\n");
        assert_eq!(connection.identity().as_deref(), Some("echo-host/1.0.0"));
    }

    #[test]
    fn routes_binary_events_and_reads_replies() {
        let mut connection = ready();
        let event = [&[0, 0, 0, 9, EVENT, 2, b'r', b'1'][..], &[1, 0, 0, 0, 1]].concat();
        let inbound = connection.push(&event).unwrap();
        assert_eq!(
            inbound,
            [Inbound::Event(RoutedEvent {
                route: "r1".into(),
                payload: NativeData::Binary(vec![1, 0, 0, 0, 1])
            })]
        );
        let inbound = connection
            .push(
                &[reply_frame(4, false, "{\"a\":1}"), reply_frame(5, true, "{\"message\":\"no\"}")]
                    .concat(),
            )
            .unwrap();
        assert_eq!(
            inbound[0],
            Inbound::Reply(NativeReply { id: 4, body: ReplyBody::Ok("{\"a\":1}".into()) })
        );
        assert_eq!(
            inbound[1],
            Inbound::Reply(NativeReply {
                id: 5,
                body: ReplyBody::Error(MapperError::new(ErrorKind::Native, "no"))
            })
        );
    }

    #[test]
    fn fails_closed_on_frames_out_of_place() {
        let mut early = Connection::default();
        early.push(b"{\"server\":\"echo-host\",\"version\":\"1\"}\n").unwrap();
        assert_eq!(
            early.push(&reply_frame(1, false, "{}")).unwrap_err().message,
            "Unexpected echo frame kind 0x82"
        );
        assert!(
            Connection::default()
                .push(b"{\"server\":\"echo-host\",\"version\":\"1\",\"x\":1}\n")
                .is_err()
        );
        let mut cut = ready();
        cut.push(&[0, 0, 0, 9, EVENT]).unwrap();
        assert_eq!(
            cut.finish().unwrap_err().message,
            "The echo host stopped inside a frame (5 bytes left)"
        );
    }

    #[test]
    fn probes_and_lists_sessions() {
        let mut connection = ready();
        let Step::Wait(outgoing) = connection.start(1, &ConnectionOp::Probe("/w".into()), 3) else {
            panic!()
        };
        assert_eq!(
            outgoing.requests[0].bytes,
            wire::frame(wire::REQUEST, 3, &json!({"method": "status", "params": {}}))
        );
        let status = NativeReply { id: 3, body: ReplyBody::Ok("{\"authenticated\":false}".into()) };
        assert!(
            matches!(connection.resume(1, Some(&status), 4), Step::Done(Ok(r)) if r.response == "{\"authenticated\":false}")
        );
        connection.start(2, &ConnectionOp::ListSessions("{\"cwd\":\"/w\"}".into()), 4);
        let listed = NativeReply {
            id: 4,
            body: ReplyBody::Ok("{\"sessions\":[{\"sessionId\":\"e1\",\"title\":\"hi\"}]}".into()),
        };
        let Step::Done(Ok(result)) = connection.resume(2, Some(&listed), 5) else { panic!() };
        let response: Value = serde_json::from_str(&result.response).unwrap();
        zcode_mapper_sdk::acp_check::list_sessions_response(&response);
        assert_eq!(
            response,
            json!({"sessions": [{"sessionId": "e1", "cwd": "/w", "title": "hi"}]})
        );
        let step = connection.start(
            3,
            &ConnectionOp::ListSessions("{\"cwd\":\"/w\",\"cursor\":\"2\"}".into()),
            5,
        );
        assert!(matches!(step, Step::Done(Err(e)) if e.kind == ErrorKind::InvalidParams));
    }
}
