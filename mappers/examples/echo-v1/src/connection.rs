//! One echo host process: the handshake, its frames, and the connection operations.

use zcode_mapper_sdk::framing::{Frames, Reader, utf8};
use zcode_mapper_sdk::prelude::*;
use zcode_mapper_sdk::secret;

use crate::TOKEN_SOURCE;
use crate::wire::{EVENT, REPLY, WELCOME, request};

const TOKEN_PLACEHOLDER: &str = "@@ECHO_TOKEN@@";

pub enum Stage {
    Probe,
    List { cwd: String },
}

#[derive(Default)]
pub struct Connection {
    frames: Frames,
    identity: Option<String>,
    /// The host's `welcome` came: it takes requests.
    ready: bool,
}

impl zcode_mapper_sdk::Link for Connection {
    type Stage = Stage;

    /// The host says hello in one JSON line; then come frames.
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        self.frames.push(bytes);
        let mut inbound = Vec::new();
        if self.identity.is_none() {
            let Some(line) = self.frames.line(64 * 1024, "The echo host's hello")? else {
                return Ok(inbound);
            };
            let (identity, answer) = hello(line)?;
            self.identity = Some(identity);
            inbound.push(answer);
        }
        while let Some(frame) = self.frames.frame("Echo frame")? {
            inbound.push(classify(&mut self.ready, frame.body)?);
        }
        Ok(inbound)
    }

    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        self.frames.finish("The echo host")?;
        Ok(Vec::new())
    }

    fn identity(&self) -> Option<String> {
        self.identity.clone()
    }

    fn probe(&mut self, _: &str, id: u64) -> Result<Next<Stage>, MapperError> {
        Ok(Next::send(Stage::Probe, request(id, "status", json!({}), 5_000)))
    }

    fn list_sessions(&mut self, params: ListParams, id: u64) -> Result<Next<Stage>, MapperError> {
        if params.cursor.is_some() {
            return Err(invalid_params("The echo host lists every session on one page"));
        }
        let cwd = params.required_cwd()?;
        let list = request(id, "list", json!({"cwd": cwd}), 5_000);
        Ok(Next::send(Stage::List { cwd }, list))
    }

    fn resume(&mut self, stage: Stage, reply: Reply, _: u64) -> Result<Next<Stage>, MapperError> {
        let result = reply_value(reply, "The echo host")?;
        match stage {
            Stage::Probe => Ok(Next::done(&result)),
            Stage::List { cwd } => Ok(Next::done(&json!({"sessions": sessions(&result, &cwd)?}))),
        }
    }
}

/// The host's hello: who it is, and the answer with the token, which the core fills in (the
/// mapper never sees it). Without a token the core writes `null`: the host serves anonymously.
fn hello(line: &[u8]) -> Result<(String, Inbound), MapperError> {
    let hello = parse(utf8(line, "Echo hello")?, ErrorKind::Protocol, "Echo hello")?;
    let fields = Fields::native(&hello, "Echo hello")?;
    fields.only(&["server", "version"])?;
    let identity =
        format!("{}/{}", fields.non_empty_str("server")?, fields.non_empty_str("version")?);
    let line = |token: Value| format!("{}\n", json!({"token": token})).into_bytes();
    let fill = secret::fill(TOKEN_PLACEHOLDER, TOKEN_SOURCE, line(Value::Null));
    let answer = secret::write("echo.auth", line(json!(TOKEN_PLACEHOLDER)), fill);
    Ok((identity, Inbound::Write(answer)))
}

/// What a frame from the host means: `welcome` once, then replies and events.
fn classify(ready: &mut bool, body: &[u8]) -> Result<Inbound, MapperError> {
    let mut reader = Reader::new(body, "Echo frame");
    match (reader.u8()?, *ready) {
        (WELCOME, false) => {
            *ready = true;
            Ok(Inbound::Ready)
        }
        (REPLY, true) => {
            let (id, failed) = (reader.u64()?, reader.u8()? != 0);
            let text = reader.rest_text("Echo reply")?;
            let body = if failed {
                let error = parse(text, ErrorKind::Protocol, "Echo error")?;
                let message = Fields::native(&error, "Echo error")?.non_empty_str("message")?;
                ReplyBody::Error(MapperError::new(ErrorKind::Native, message))
            } else {
                ReplyBody::Ok(NativeData::Text(text.to_string()))
            };
            Ok(Inbound::Reply(NativeReply { id, body }))
        }
        (EVENT, true) => {
            let length = reader.u8()?.into();
            let route = reader.text(length, "Echo event route")?.to_string();
            let payload = NativeData::Binary(reader.rest().to_vec());
            Ok(Inbound::Event(RoutedEvent { route, payload }))
        }
        (kind, _) => Err(protocol(format!("Unexpected echo frame kind {kind:#04x}"))),
    }
}

/// `{sessions: [{sessionId, title}]}` as ACP `SessionInfo` objects.
fn sessions(result: &Value, cwd: &str) -> Result<Vec<Value>, MapperError> {
    let info = |session: &Value| -> Result<Value, MapperError> {
        let session = Fields::native(session, "echo session")?;
        let id = session.non_empty_str("sessionId")?;
        Ok(json!({"sessionId": id, "cwd": cwd, "title": session.str("title")?}))
    };
    Fields::native(result, "echo list result")?.array("sessions")?.iter().map(info).collect()
}

#[cfg(test)]
mod tests {
    use zcode_mapper_sdk::Connection as _;
    use zcode_mapper_sdk::Linked;

    use crate::wire;

    use super::*;

    fn linked() -> Linked<Connection> {
        Linked::new(Connection::default())
    }

    fn reply_frame(id: u64, failed: bool, json: &str) -> Vec<u8> {
        let mut body = vec![REPLY];
        body.extend_from_slice(&id.to_be_bytes());
        body.push(u8::from(failed));
        body.extend_from_slice(json.as_bytes());
        [&(body.len() as u32).to_be_bytes()[..], &body].concat()
    }

    fn ready() -> Linked<Connection> {
        let mut connection = linked();
        connection.push(b"{\"server\":\"echo-host\",\"version\":\"1.0.0\"}\n").unwrap();
        assert_eq!(connection.push(&[0, 0, 0, 3, WELCOME, b'{', b'}']).unwrap(), [Inbound::Ready]);
        connection
    }

    #[test]
    fn answers_the_hello_with_a_token_the_core_fills_in() {
        let mut connection = linked();
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
        let mut early = linked();
        early.push(b"{\"server\":\"echo-host\",\"version\":\"1\"}\n").unwrap();
        assert_eq!(
            early.push(&reply_frame(1, false, "{}")).unwrap_err().message,
            "Unexpected echo frame kind 0x82"
        );
        assert!(linked().push(b"{\"server\":\"echo-host\",\"version\":\"1\",\"x\":1}\n").is_err());
        let mut zero = ready();
        assert_eq!(
            zero.push(&[0, 0, 0, 0]).unwrap_err().message,
            "Echo frame length 0 is out of bounds"
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
        let Step::Wait(outgoing) = connection.start(
            1,
            &ConnectionOp::Probe(zcode_mapper_sdk::contract::ProbeRequest::workspace("/w")),
            3,
        ) else {
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
