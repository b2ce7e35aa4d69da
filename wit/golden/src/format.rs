//! The golden-trace format (`docs/golden-traces.md`), written by the recorder and read by the
//! replayer: JSON Lines, `#` comments, each other line one mapper call (`call` and its inputs)
//! and optionally what it must return (`expect`). Values follow `values.rs`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::values::{
    self, ConnectionOpDef, EffectsDef, MapperErrorDef, Mode, OutgoingDef, SessionInitDef,
    SessionOpDef, StepDef, bytes, list, option, with_mode,
};
use zcode_contract::{
    ConnectionOp, Effects, Inbound, MapperError, MapperFault, NativeReply, Outgoing, SessionInit,
    SessionInput, SessionOp, Step,
};

/// The session a line names when it names none.
pub const DEFAULT_SESSION: &str = "main";

fn default_session() -> String {
    DEFAULT_SESSION.to_string()
}

/// One mapper call with its inputs. `reply: None` is a resume after a step that awaited no
/// reply (the field is left out).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "call", deny_unknown_fields)]
pub enum Call {
    #[serde(rename = "connection.new")]
    ConnectionNew,
    #[serde(rename = "connection.push")]
    ConnectionPush {
        #[serde(with = "bytes")]
        bytes: Vec<u8>,
    },
    #[serde(rename = "connection.finish")]
    ConnectionFinish,
    #[serde(rename = "connection.start", rename_all = "camelCase")]
    ConnectionStart {
        op_id: u64,
        #[serde(with = "ConnectionOpDef")]
        op: ConnectionOp,
        first_request_id: u64,
    },
    #[serde(rename = "connection.resume", rename_all = "camelCase")]
    ConnectionResume {
        op_id: u64,
        #[serde(with = "option", default, skip_serializing_if = "Option::is_none")]
        reply: Option<NativeReply>,
        first_request_id: u64,
    },
    #[serde(rename = "connection.identity")]
    ConnectionIdentity,
    #[serde(rename = "session.new")]
    SessionNew {
        #[serde(default = "default_session")]
        name: String,
        #[serde(with = "SessionInitDef")]
        init: SessionInit,
    },
    #[serde(rename = "session.start", rename_all = "camelCase")]
    SessionStart {
        #[serde(default = "default_session")]
        name: String,
        op_id: u64,
        #[serde(with = "SessionOpDef")]
        op: SessionOp,
        first_request_id: u64,
    },
    #[serde(rename = "session.resume", rename_all = "camelCase")]
    SessionResume {
        #[serde(default = "default_session")]
        name: String,
        op_id: u64,
        #[serde(with = "option", default, skip_serializing_if = "Option::is_none")]
        reply: Option<NativeReply>,
        first_request_id: u64,
    },
    #[serde(rename = "session.map")]
    SessionMap {
        #[serde(default = "default_session")]
        name: String,
        #[serde(with = "list")]
        inputs: Vec<SessionInput>,
    },
    #[serde(rename = "session.issue", rename_all = "camelCase")]
    SessionIssue {
        #[serde(default = "default_session")]
        name: String,
        first_request_id: u64,
    },
}

impl Call {
    /// The `call` field: `connection.push`, `session.map`, ...
    pub fn name(&self) -> &'static str {
        match self {
            Call::ConnectionNew => "connection.new",
            Call::ConnectionPush { .. } => "connection.push",
            Call::ConnectionFinish => "connection.finish",
            Call::ConnectionStart { .. } => "connection.start",
            Call::ConnectionResume { .. } => "connection.resume",
            Call::ConnectionIdentity => "connection.identity",
            Call::SessionNew { .. } => "session.new",
            Call::SessionStart { .. } => "session.start",
            Call::SessionResume { .. } => "session.resume",
            Call::SessionMap { .. } => "session.map",
            Call::SessionIssue { .. } => "session.issue",
        }
    }

    /// Creates a connection or session: no result but a failure.
    pub fn creates(&self) -> bool {
        matches!(self, Call::ConnectionNew | Call::SessionNew { .. })
    }

    fn result_kind(&self) -> ResultKind {
        match self {
            Call::ConnectionNew | Call::SessionNew { .. } => ResultKind::Created,
            Call::ConnectionPush { .. } | Call::ConnectionFinish => ResultKind::Inbound,
            Call::ConnectionStart { .. }
            | Call::ConnectionResume { .. }
            | Call::SessionStart { .. }
            | Call::SessionResume { .. } => ResultKind::Step,
            Call::ConnectionIdentity => ResultKind::Identity,
            Call::SessionMap { .. } => ResultKind::Effects,
            Call::SessionIssue { .. } => ResultKind::Outgoing,
        }
    }
}

#[derive(Clone, Copy)]
enum ResultKind {
    Created,
    Inbound,
    Step,
    Identity,
    Effects,
    Outgoing,
}

/// What a call returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A connection or session was created.
    Created,
    Inbound(Vec<Inbound>),
    Step(Step),
    Identity(Option<String>),
    Effects(Effects),
    Outgoing(Outgoing),
    /// `push` or `finish` failed the transport with a mapper error.
    Error(MapperError),
    /// The mapper failed itself (trapped, hit a limit, broke a rule).
    Fault(MapperFault),
}

impl From<Result<Vec<Inbound>, MapperError>> for Outcome {
    fn from(result: Result<Vec<Inbound>, MapperError>) -> Self {
        result.map_or_else(Outcome::Error, Outcome::Inbound)
    }
}

impl<T: Into<Outcome>> From<Result<T, MapperFault>> for Outcome {
    fn from(result: Result<T, MapperFault>) -> Self {
        result.map_or_else(Outcome::Fault, Into::into)
    }
}

impl From<Step> for Outcome {
    fn from(step: Step) -> Self {
        Outcome::Step(step)
    }
}

impl From<Effects> for Outcome {
    fn from(effects: Effects) -> Self {
        Outcome::Effects(effects)
    }
}

impl From<Outgoing> for Outcome {
    fn from(outgoing: Outgoing) -> Self {
        Outcome::Outgoing(outgoing)
    }
}

impl From<Option<String>> for Outcome {
    fn from(identity: Option<String>) -> Self {
        Outcome::Identity(identity)
    }
}

/// The marker kind of a fault in an `{"error": ...}` expectation.
const FAULT_KIND: &str = "fault";

impl Outcome {
    /// The outcome as an `expect` value, readable (`Created` is `null`).
    pub fn to_value(&self) -> Value {
        with_mode(Mode::Readable, || {
            let value = match self {
                Outcome::Created => Ok(Value::Null),
                Outcome::Inbound(items) => list::serialize(items, serde_json::value::Serializer),
                Outcome::Step(step) => StepDef::serialize(step, serde_json::value::Serializer),
                Outcome::Identity(identity) => Ok(json!(identity)),
                Outcome::Effects(effects) => {
                    EffectsDef::serialize(effects, serde_json::value::Serializer)
                }
                Outcome::Outgoing(outgoing) => {
                    OutgoingDef::serialize(outgoing, serde_json::value::Serializer)
                }
                Outcome::Error(error) => {
                    MapperErrorDef::serialize(error, serde_json::value::Serializer)
                        .map(|error| json!({ "error": error }))
                }
                Outcome::Fault(fault) => {
                    Ok(json!({ "error": { "kind": FAULT_KIND, "message": fault.0 } }))
                }
            };
            value.expect("trace values serialize")
        })
    }

    /// Reads the `expect` of a line with `call`.
    pub fn from_value(call: &Call, expect: &Value) -> Result<Outcome, String> {
        if let Some(error) =
            expect.as_object().filter(|m| m.len() == 1).and_then(|m| m.get("error"))
        {
            if error.get("kind").and_then(Value::as_str) == Some(FAULT_KIND) {
                let message = error.get("message").and_then(Value::as_str);
                let message = message.ok_or("a fault needs a string `message`")?;
                return Ok(Outcome::Fault(MapperFault(message.to_string())));
            }
            return read(MapperErrorDef::deserialize(error)).map(Outcome::Error);
        }
        match call.result_kind() {
            ResultKind::Created if expect.is_null() => Ok(Outcome::Created),
            ResultKind::Created => Err("a created resource has no result but an error".into()),
            ResultKind::Inbound => read(list::deserialize(expect)).map(Outcome::Inbound),
            ResultKind::Step => read(StepDef::deserialize(expect)).map(Outcome::Step),
            ResultKind::Identity => {
                read(Option::<String>::deserialize(expect)).map(Outcome::Identity)
            }
            ResultKind::Effects => read(EffectsDef::deserialize(expect)).map(Outcome::Effects),
            ResultKind::Outgoing => read(OutgoingDef::deserialize(expect)).map(Outcome::Outgoing),
        }
    }
}

fn read<T>(result: Result<T, serde_json::Error>) -> Result<T, String> {
    result.map_err(|e| e.to_string())
}

/// One parsed trace line.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub call: Call,
    /// `None`: the line is performed but not checked. `Some(Value::Null)` on a line that does
    /// not create anything marks it for blessing.
    pub expect: Option<Value>,
}

/// Parses one line of a trace; `None` for blank and comment lines.
pub fn parse_line(raw: &str) -> Option<Result<Line, String>> {
    let trimmed = raw.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return None;
    }
    Some(parse_object(trimmed))
}

fn parse_object(text: &str) -> Result<Line, String> {
    let mut object: Map<String, Value> = match serde_json::from_str(text) {
        Ok(Value::Object(object)) => object,
        Ok(_) => return Err("a line must be a JSON object with a string `call`".into()),
        Err(e) => return Err(format!("not JSON: {e}")),
    };
    let expect = object.remove("expect");
    let call = Call::deserialize(Value::Object(object)).map_err(|e| e.to_string())?;
    Ok(Line { call, expect })
}

/// One trace line (without the newline): `call` first, then its inputs (written exactly), then
/// `expect` (written readable) if given. Object keys are sorted inside values, so the text is
/// the same on every build.
pub fn write_line(call: &Call, expect: Option<&Value>) -> String {
    let mut text =
        with_mode(Mode::Exact, || serde_json::to_string(call)).expect("trace calls serialize");
    if let Some(expect) = expect {
        text.pop(); // the closing brace
        text.push_str(",\"expect\":");
        text.push_str(&values::compact(expect));
        text.push('}');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use zcode_contract::{
        Action, ClientFeatures, ErrorKind, NativeData, NativeWrite, ReplyBody, SecretFill,
    };

    fn round_trip(call: Call) {
        let text = write_line(&call, None);
        let line = parse_line(&text).expect("a call line").expect("parses");
        assert_eq!(line.call, call, "{text}");
    }

    #[test]
    fn every_call_round_trips() {
        let reply = NativeReply { id: 4, body: ReplyBody::Ok(NativeData::Binary(vec![0, 255])) };
        for call in [
            Call::ConnectionNew,
            Call::ConnectionPush { bytes: b"{\"id\": 1}\n".to_vec() },
            Call::ConnectionPush { bytes: vec![0xff, 0, 10] },
            Call::ConnectionFinish,
            Call::ConnectionStart { op_id: 1, op: ConnectionOp::Setup, first_request_id: 3 },
            Call::ConnectionResume { op_id: 1, reply: Some(reply.clone()), first_request_id: 4 },
            Call::ConnectionResume { op_id: 1, reply: None, first_request_id: 4 },
            Call::ConnectionIdentity,
            Call::SessionNew {
                name: "s1".into(),
                init: SessionInit {
                    facts: Default::default(),
                    workspace: "/w".into(),
                    client: ClientFeatures::default(),
                },
            },
            Call::SessionStart {
                name: "s1".into(),
                op_id: 2,
                op: SessionOp::Prompt("{\"b\":1, \"a\":2}".into()),
                first_request_id: 5,
            },
            Call::SessionResume { name: "s1".into(), op_id: 2, reply: None, first_request_id: 6 },
            Call::SessionMap {
                name: "s1".into(),
                inputs: vec![
                    SessionInput::Event(NativeData::Text("{\"a\":1}".into())),
                    SessionInput::Event(NativeData::Text("not json".into())),
                    SessionInput::Reply(reply),
                ],
            },
            Call::SessionIssue { name: "s1".into(), first_request_id: 7 },
        ] {
            round_trip(call);
        }
    }

    #[test]
    fn lines_read_as_people_write_them() {
        let line = parse_line(
            r#"{"call":"session.map","inputs":[{"event":{"text":{"type":"x","n":1}}}],"expect":{"actions":[]}}"#,
        )
        .unwrap()
        .unwrap();
        let Call::SessionMap { name, inputs } = &line.call else { panic!("{line:?}") };
        assert_eq!(name, DEFAULT_SESSION);
        assert_eq!(
            inputs,
            &[SessionInput::Event(NativeData::Text(r#"{"n":1,"type":"x"}"#.into()))]
        );
        assert_eq!(line.expect, Some(json!({"actions": []})));
        assert_eq!(parse_line("  # a comment"), None);
        assert_eq!(parse_line(""), None);
        let unknown = parse_line(r#"{"call":"session.dance"}"#).unwrap().unwrap_err();
        assert!(unknown.contains("unknown variant `session.dance`"), "{unknown}");
        let typo =
            parse_line(r#"{"call":"session.issue","firstRequestID":1}"#).unwrap().unwrap_err();
        assert!(typo.contains("firstRequestID"), "{typo}");
        assert_eq!(
            parse_line("[1]").unwrap().unwrap_err(),
            "a line must be a JSON object with a string `call`"
        );
    }

    #[test]
    fn a_line_puts_call_first_and_expect_last() {
        let call = Call::SessionIssue { name: "s2".into(), first_request_id: 9 };
        let expect = Outcome::Outgoing(Outgoing::default()).to_value();
        assert_eq!(
            write_line(&call, Some(&expect)),
            r#"{"call":"session.issue","name":"s2","firstRequestId":9,"expect":{}}"#
        );
    }

    #[test]
    fn outcomes_round_trip_through_expect_values() {
        let map = Call::SessionMap { name: "s".into(), inputs: vec![] };
        let write = NativeWrite {
            bytes: b"{\"key\":\"@@K@@\"}\n".to_vec(),
            label: "answer".into(),
            secret: Some(SecretFill {
                placeholder: "@@K@@".into(),
                source: "api-key".into(),
                args: vec![("provider".into(), "zai".into())],
                fallback: vec![0xff],
            }),
        };
        let effects = Effects {
            actions: vec![Action::Update("{\"b\":1,\"a\":2}".into())],
            writes: vec![write],
            requests: 2,
        };
        let value = Outcome::Effects(effects.clone()).to_value();
        assert_eq!(value["writes"][0]["bytes"], json!({"key": "@@K@@"}));
        assert_eq!(value["writes"][0]["secret"]["fallback"], json!({"base64": "/w=="}));
        // Read back, the JSON text is compact with sorted keys: the same JSON.
        let Outcome::Effects(read) = Outcome::from_value(&map, &value).unwrap() else { panic!() };
        assert_eq!(read.actions, vec![Action::Update("{\"a\":2,\"b\":1}".into())]);
        assert_eq!((read.writes, read.requests), (effects.writes, effects.requests));

        let fault = Outcome::Fault(MapperFault("trapped".into()));
        assert_eq!(fault.to_value(), json!({"error": {"kind": "fault", "message": "trapped"}}));
        assert_eq!(Outcome::from_value(&map, &fault.to_value()), Ok(fault));
        let push = Call::ConnectionPush { bytes: vec![] };
        let error = Outcome::Error(MapperError::new(ErrorKind::Protocol, "bad frame"));
        assert_eq!(Outcome::from_value(&push, &error.to_value()), Ok(error));
        let identity = Outcome::Identity(Some("zcode 3.15".into()));
        assert_eq!(identity.to_value(), json!("zcode 3.15"));
        assert_eq!(
            Outcome::from_value(&Call::ConnectionIdentity, &json!(null)),
            Ok(Outcome::Identity(None))
        );
        let bad = Outcome::from_value(&map, &json!({"actions": [{"teleport": 1}]})).unwrap_err();
        assert!(bad.contains("unknown variant `teleport`"), "{bad}");
    }
}
