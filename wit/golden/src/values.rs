//! Contract values in the trace form: the serde form of the contract types (records as objects
//! with snake_case fields, variants externally tagged with kebab-case names), with three
//! readability rules applied to the fields that carry text or bytes:
//!
//! - **JSON text** (updates, responses, operation parameters, text native data, ...) is written
//!   as the JSON value it holds, and a JSON value is read as its compact text with keys sorted.
//! - **Bytes** (pushed bytes, request and write bytes, secret-fill fallbacks) are a string when
//!   they are UTF-8, else `{"base64": ...}`; any other JSON value is read as that value on one
//!   NDJSON line (`<compact JSON>\n`).
//! - **Binary native data** is `{"binary": "<base64>"}`.
//!
//! Inputs must replay as exactly what the mapper saw, so they are written [`Mode::Exact`]: JSON
//! text becomes a value only when reading it back gives the same text (it is compact with keys
//! sorted), and bytes are never written as a JSON line. Results are written [`Mode::Readable`]:
//! JSON text and one-line JSON bytes always as values, since results are compared in that form
//! whatever their spacing or key order.
//!
//! The mirrors below are checked against the contract types by serde's `remote` derive: a field
//! added to the contract does not compile until the trace form knows it.

use std::cell::Cell;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::de::{Deserializer, Error as _};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use zcode_contract::{
    Action, ClientFeatures, ConnectionOp, Effects, ErrorKind, Inbound, Interaction,
    InteractionAnswer, InteractionOutcome, InteractionRequest, MapperError, NativeData,
    NativeReply, NativeRequest, NativeWrite, OpResult, Outgoing, PermissionRequest, ReplyBody,
    RoutedEvent, SecretFill, SessionInit, SessionInput, SessionOp, Step, StopReason, Terminal,
};

/// How values are written (reading accepts both).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Inputs: JSON text as a value only where it reads back as the same text.
    Exact,
    /// Results: JSON text and one-line JSON bytes as values, for reading and comparing.
    Readable,
}

thread_local! {
    static MODE: Cell<Mode> = const { Cell::new(Mode::Readable) };
}

/// Runs `write` with values written in `mode` (serde `with` functions take no arguments, so the
/// mode is set for the thread for the duration of one write, and restored even on a panic).
pub fn with_mode<T>(mode: Mode, write: impl FnOnce() -> T) -> T {
    struct Restore(Mode);

    impl Drop for Restore {
        fn drop(&mut self) {
            MODE.with(|current| current.set(self.0));
        }
    }

    let _restore = Restore(MODE.with(|current| current.replace(mode)));
    write()
}

fn mode() -> Mode {
    MODE.with(Cell::get)
}

// ----- JSON helpers ---------------------------------------------------------------------------

/// Keys sorted at every level, so written JSON is the same whatever the map implementation.
pub fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&map[k]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// A JSON value as compact text with keys sorted: how a trace's JSON value becomes text.
pub fn compact(value: &Value) -> String {
    sorted(value).to_string()
}

/// The JSON a text holds, unless it is not JSON or is a JSON string (a string in a trace is
/// the text itself).
fn json_of(text: &str) -> Option<Value> {
    serde_json::from_str::<Value>(text).ok().filter(|value| !value.is_string())
}

/// The value that stands for `text` in the current mode.
pub fn json_text_value(text: &str) -> Value {
    match json_of(text) {
        Some(value) if mode() == Mode::Readable => sorted(&value),
        Some(value) if compact(&value) == text => sorted(&value),
        _ => Value::String(text.to_string()),
    }
}

/// The text a trace value stands for.
pub fn text_of_json_value(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => compact(other),
    }
}

/// The value that stands for `bytes` in the current mode.
pub fn bytes_value(bytes: &[u8]) -> Value {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return serde_json::json!({ "base64": BASE64.encode(bytes) });
    };
    if mode() == Mode::Readable
        && let Some(line) = text.strip_suffix('\n')
        && !line.contains('\n')
        && let Some(value) = json_of(line).filter(|value| !is_base64_object(value))
    {
        return sorted(&value);
    }
    Value::String(text.to_string())
}

/// The bytes a trace value stands for.
pub fn bytes_of_value(value: &Value) -> Result<Vec<u8>, String> {
    match value {
        Value::String(text) => Ok(text.as_bytes().to_vec()),
        Value::Object(map) if is_base64_object(value) => {
            let text = map["base64"].as_str().unwrap_or_default();
            BASE64.decode(text).map_err(|e| format!("invalid base64: {e}"))
        }
        other => Ok(format!("{}\n", compact(other)).into_bytes()),
    }
}

fn is_base64_object(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|map| map.len() == 1 && map.get("base64").is_some_and(Value::is_string))
}

/// `with` module: a JSON text field.
mod json_text {
    use super::*;

    pub fn serialize<S: Serializer>(text: &str, serializer: S) -> Result<S::Ok, S::Error> {
        json_text_value(text).serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
        Ok(text_of_json_value(&Value::deserialize(deserializer)?))
    }
}

/// `with` module: an optional JSON text field.
mod opt_json_text {
    use super::*;

    pub fn serialize<S: Serializer>(text: &Option<String>, s: S) -> Result<S::Ok, S::Error> {
        text.as_deref().map(json_text_value).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Null => None,
            value => Some(text_of_json_value(&value)),
        })
    }
}

/// `with` module: a list of JSON texts.
mod json_texts {
    use super::*;

    pub fn serialize<S: Serializer>(texts: &[String], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(texts.iter().map(|text| json_text_value(text)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        Ok(Vec::<Value>::deserialize(d)?.iter().map(text_of_json_value).collect())
    }
}

/// `with` module: a bytes field.
pub(crate) mod bytes {
    use super::*;

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        bytes_value(bytes).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        bytes_of_value(&Value::deserialize(d)?).map_err(D::Error::custom)
    }
}

/// `with` module: binary native data, always base64.
mod base64_bytes {
    use super::*;

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&BASE64.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        BASE64.decode(text).map_err(|e| D::Error::custom(format!("invalid base64: {e}")))
    }
}

/// A contract type with a trace-form mirror below.
pub(crate) trait Mirrored: Sized {
    fn write<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error>;
    fn read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error>;
}

macro_rules! mirrored {
    ($($type:ty => $mirror:ident),+ $(,)?) => {
        $(impl Mirrored for $type {
            fn write<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                $mirror::serialize(self, serializer)
            }

            fn read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $mirror::deserialize(deserializer)
            }
        })+
    };
}

mirrored!(
    Action => ActionDef,
    Inbound => InboundDef,
    NativeReply => NativeReplyDef,
    NativeRequest => NativeRequestDef,
    NativeWrite => NativeWriteDef,
    SecretFill => SecretFillDef,
    SessionInput => SessionInputDef,
);

/// A mirrored value, borrowed for writing.
pub(crate) struct By<'a, T>(pub &'a T);

impl<T: Mirrored> Serialize for By<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.write(serializer)
    }
}

/// A mirrored value, read.
pub(crate) struct Read<T>(pub T);

impl<'de, T: Mirrored> Deserialize<'de> for Read<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::read(deserializer).map(Read)
    }
}

/// `with` module: a list of a mirrored type.
pub(crate) mod list {
    use super::*;

    pub fn serialize<S: Serializer, T: Mirrored>(items: &[T], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(items.iter().map(By))
    }

    pub fn deserialize<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: Mirrored,
    {
        Ok(Vec::<Read<T>>::deserialize(d)?.into_iter().map(|read| read.0).collect())
    }
}

/// `with` module: an optional mirrored value.
pub(crate) mod option {
    use super::*;

    pub fn serialize<S, T>(item: &Option<T>, s: S) -> Result<S::Ok, S::Error>
    where
        S: Serializer,
        T: Mirrored,
    {
        item.as_ref().map(By).serialize(s)
    }

    pub fn deserialize<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: Mirrored,
    {
        Ok(Option::<Read<T>>::deserialize(d)?.map(|read| read.0))
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

// ----- mirrors of the contract types -----------------------------------------------------------

#[derive(Serialize, Deserialize)]
#[serde(remote = "MapperError")]
pub(crate) struct MapperErrorDef {
    kind: ErrorKind,
    message: String,
    #[serde(with = "opt_json_text", default, skip_serializing_if = "Option::is_none")]
    data: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "NativeData", rename_all = "kebab-case")]
pub(crate) enum NativeDataDef {
    Text(#[serde(with = "json_text")] String),
    Binary(#[serde(with = "base64_bytes")] Vec<u8>),
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "ReplyBody", rename_all = "kebab-case")]
pub(crate) enum ReplyBodyDef {
    Ok(#[serde(with = "NativeDataDef")] NativeData),
    Error(#[serde(with = "MapperErrorDef")] MapperError),
    Lost(String),
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "NativeReply")]
pub(crate) struct NativeReplyDef {
    id: u64,
    #[serde(with = "ReplyBodyDef")]
    body: ReplyBody,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "NativeRequest")]
pub(crate) struct NativeRequestDef {
    id: u64,
    #[serde(with = "bytes")]
    bytes: Vec<u8>,
    label: String,
    timeout_ms: u32,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "SecretFill")]
pub(crate) struct SecretFillDef {
    placeholder: String,
    source: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    args: Vec<(String, String)>,
    #[serde(with = "bytes")]
    fallback: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "NativeWrite")]
pub(crate) struct NativeWriteDef {
    #[serde(with = "bytes")]
    bytes: Vec<u8>,
    label: String,
    #[serde(with = "option", default, skip_serializing_if = "Option::is_none")]
    secret: Option<SecretFill>,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "RoutedEvent")]
pub(crate) struct RoutedEventDef {
    route: String,
    #[serde(with = "NativeDataDef")]
    payload: NativeData,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "Inbound", rename_all = "kebab-case")]
pub(crate) enum InboundDef {
    Reply(#[serde(with = "NativeReplyDef")] NativeReply),
    Event(#[serde(with = "RoutedEventDef")] RoutedEvent),
    Write(#[serde(with = "NativeWriteDef")] NativeWrite),
    Ready,
    Ignored(String),
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "Outgoing")]
pub(crate) struct OutgoingDef {
    #[serde(with = "json_texts", default, skip_serializing_if = "Vec::is_empty")]
    updates: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    routes_added: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    routes_removed: Vec<String>,
    #[serde(with = "list", default, skip_serializing_if = "Vec::is_empty")]
    writes: Vec<NativeWrite>,
    #[serde(with = "list", default, skip_serializing_if = "Vec::is_empty")]
    requests: Vec<NativeRequest>,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "OpResult")]
pub(crate) struct OpResultDef {
    #[serde(with = "json_text")]
    response: String,
    #[serde(with = "json_texts", default, skip_serializing_if = "Vec::is_empty")]
    updates: Vec<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "Result<OpResult, MapperError>")]
pub(crate) enum OpOutcomeDef {
    Ok(#[serde(with = "OpResultDef")] OpResult),
    Err(#[serde(with = "MapperErrorDef")] MapperError),
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "Step", rename_all = "kebab-case")]
pub(crate) enum StepDef {
    Wait(#[serde(with = "OutgoingDef")] Outgoing),
    Done(#[serde(with = "OpOutcomeDef")] Result<OpResult, MapperError>),
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "PermissionRequest")]
pub(crate) struct PermissionRequestDef {
    #[serde(with = "json_text")]
    request: String,
    deny_option: String,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "InteractionRequest", rename_all = "kebab-case")]
pub(crate) enum InteractionRequestDef {
    Permission(#[serde(with = "PermissionRequestDef")] PermissionRequest),
    Elicitation(#[serde(with = "json_text")] String),
    Headless(String),
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "Interaction")]
pub(crate) struct InteractionDef {
    key: String,
    #[serde(with = "InteractionRequestDef")]
    request: InteractionRequest,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "Terminal", rename_all = "kebab-case")]
pub(crate) enum TerminalDef {
    Stop(StopReason),
    Failed(#[serde(with = "MapperErrorDef")] MapperError),
    Broken(#[serde(with = "MapperErrorDef")] MapperError),
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "Action", rename_all = "kebab-case")]
pub(crate) enum ActionDef {
    Update(#[serde(with = "json_text")] String),
    Interaction(#[serde(with = "InteractionDef")] Interaction),
    Terminal(#[serde(with = "TerminalDef")] Terminal),
    Ignore(String),
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "Effects")]
pub(crate) struct EffectsDef {
    #[serde(with = "list", default)]
    actions: Vec<Action>,
    #[serde(with = "list", default, skip_serializing_if = "Vec::is_empty")]
    writes: Vec<NativeWrite>,
    #[serde(default, skip_serializing_if = "is_zero")]
    requests: u32,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "SessionInput", rename_all = "kebab-case")]
pub(crate) enum SessionInputDef {
    Event(#[serde(with = "NativeDataDef")] NativeData),
    Reply(#[serde(with = "NativeReplyDef")] NativeReply),
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "ConnectionOp", rename_all = "kebab-case")]
pub(crate) enum ConnectionOpDef {
    Setup,
    /// `{"probe": "/w"}` without facts, as recorded before the probe carried them
    /// (`ProbeRequest`'s own form).
    Probe(zcode_contract::ProbeRequest),
    ListSessions(#[serde(with = "json_text")] String),
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "InteractionOutcome", rename_all = "kebab-case")]
pub(crate) enum InteractionOutcomeDef {
    Selected(String),
    Elicited(#[serde(with = "json_text")] String),
    Unavailable(String),
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "InteractionAnswer")]
pub(crate) struct InteractionAnswerDef {
    key: String,
    #[serde(with = "InteractionOutcomeDef")]
    outcome: InteractionOutcome,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "SessionOp", rename_all = "kebab-case")]
pub(crate) enum SessionOpDef {
    Create(#[serde(with = "json_text")] String),
    Load(#[serde(with = "json_text")] String),
    Resume(#[serde(with = "json_text")] String),
    Fork(#[serde(with = "json_text")] String),
    Prompt(#[serde(with = "json_text")] String),
    Cancel,
    FinishTurn,
    SetMode(#[serde(with = "json_text")] String),
    SetConfigOption(#[serde(with = "json_text")] String),
    Answer(#[serde(with = "InteractionAnswerDef")] InteractionAnswer),
    Close,
}

#[derive(Serialize, Deserialize)]
#[serde(remote = "SessionInit")]
pub(crate) struct SessionInitDef {
    workspace: String,
    #[serde(default)]
    client: ClientFeatures,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    facts: zcode_contract::Facts,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn write<T>(
        mode: Mode,
        value: &T,
        serialize: fn(&T, serde_json::value::Serializer) -> Result<Value, serde_json::Error>,
    ) -> Value {
        with_mode(mode, || serialize(value, serde_json::value::Serializer).unwrap())
    }

    #[test]
    fn exact_json_text_reads_back_as_the_same_text() {
        let op = |text: &str| SessionOp::Prompt(text.to_string());
        for (text, written) in [
            (r#"{"a":1,"b":[true]}"#, json!({"prompt": {"a": 1, "b": [true]}})),
            // Spacing or key order a reader would not reproduce: kept as text.
            (r#"{ "a": 1 }"#, json!({"prompt": r#"{ "a": 1 }"#})),
            (r#"{"b":1,"a":2}"#, json!({"prompt": r#"{"b":1,"a":2}"#})),
            // A JSON string value would read as the bare text.
            (r#""quoted""#, json!({"prompt": r#""quoted""#})),
            ("not json", json!({"prompt": "not json"})),
        ] {
            let value = write(Mode::Exact, &op(text), SessionOpDef::serialize);
            assert_eq!(value, written, "{text}");
            let read = SessionOpDef::deserialize(value).unwrap();
            assert_eq!(read, op(text), "{text} reads back");
        }
        // Readable: always the JSON.
        let readable = write(Mode::Readable, &op(r#"{ "b": 1, "a": 2 }"#), SessionOpDef::serialize);
        assert_eq!(readable, json!({"prompt": {"a": 2, "b": 1}}));
    }

    #[test]
    fn bytes_are_text_base64_or_one_json_line() {
        let request = |bytes: &[u8]| NativeRequest {
            id: 1,
            bytes: bytes.to_vec(),
            label: "l".into(),
            timeout_ms: 0,
        };
        let bytes_of = |mode, bytes: &[u8]| {
            write(mode, &request(bytes), NativeRequestDef::serialize)["bytes"].clone()
        };
        assert_eq!(bytes_of(Mode::Exact, b"{\"id\":1}\n"), json!("{\"id\":1}\n"));
        assert_eq!(bytes_of(Mode::Readable, b"{\"id\": 1}\n"), json!({"id": 1}));
        assert_eq!(bytes_of(Mode::Readable, b"{\"id\":1}"), json!("{\"id\":1}"), "not a line");
        assert_eq!(bytes_of(Mode::Readable, b"a\nb\n"), json!("a\nb\n"), "two lines");
        assert_eq!(bytes_of(Mode::Readable, &[0xff, b'a']), json!({"base64": "/2E="}));
        assert_eq!(
            bytes_of(Mode::Readable, b"{\"base64\":\"AA==\"}\n"),
            json!("{\"base64\":\"AA==\"}\n"),
            "a line that would read as base64 stays text"
        );
        assert_eq!(bytes_of_value(&json!({"id": 1})).unwrap(), b"{\"id\":1}\n");
        assert_eq!(bytes_of_value(&json!({"base64": "/2E="})).unwrap(), [0xff, b'a']);
        assert!(bytes_of_value(&json!({"base64": "!!"})).is_err());
    }

    #[test]
    fn binary_native_data_is_base64_and_text_is_json() {
        let data = NativeData::Binary(vec![0, 1, 255]);
        let value = write(Mode::Exact, &data, NativeDataDef::serialize);
        assert_eq!(value, json!({"binary": "AAH/"}));
        assert_eq!(NativeDataDef::deserialize(value).unwrap(), data);
        let text = NativeData::Text("{\"a\":1}".into());
        assert_eq!(write(Mode::Exact, &text, NativeDataDef::serialize), json!({"text": {"a": 1}}));
    }

    #[test]
    fn empty_fields_are_left_out_and_read_as_empty() {
        let step = Step::Wait(Outgoing { routes_added: vec!["r".into()], ..Outgoing::default() });
        let value = write(Mode::Readable, &step, StepDef::serialize);
        assert_eq!(value, json!({"wait": {"routes_added": ["r"]}}));
        assert_eq!(StepDef::deserialize(value).unwrap(), step);
        let effects = Effects::default();
        assert_eq!(write(Mode::Readable, &effects, EffectsDef::serialize), json!({"actions": []}));
        let done = Step::Done(Err(MapperError::new(ErrorKind::Native, "m")));
        let value = write(Mode::Readable, &done, StepDef::serialize);
        assert_eq!(value, json!({"done": {"Err": {"kind": "native", "message": "m"}}}));
    }

    #[test]
    fn sorted_json_is_the_same_whatever_the_map() {
        let value: Value =
            serde_json::from_str(r#"{"b":{"d":1,"c":2},"a":[{"z":0,"y":1}]}"#).unwrap();
        assert_eq!(compact(&value), r#"{"a":[{"y":1,"z":0}],"b":{"c":2,"d":1}}"#);
    }
}
