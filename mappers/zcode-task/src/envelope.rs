//! The bridge's NDJSON envelope: framing of host stdout, classification of frames, and the
//! bytes of the requests the mapper sends.
//!
//! Every frame is one JSON object per line without a `jsonrpc` member: `{id, result}`,
//! `{id, error}`, or the one notification the bridge sends, `{"method":"event", ...}`. Anything
//! else fails the transport: the bridge never sends it, so it can only mean a broken host.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use zcode_mapper_sdk::contract::{
    ErrorKind, Inbound, MapperError, NativeData, NativeReply, ReplyBody, RoutedEvent,
};

use zcode_mapper_sdk::compact::{Reader, once};
use zcode_mapper_sdk::framing::Lines;
use zcode_mapper_sdk::joined;
use zcode_mapper_sdk::json::{Fields, protocol};

/// Longest frame accepted, and longest unterminated buffer kept while waiting for a newline.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// Splits host stdout into lines and classifies them. Once it has failed, it stays failed.
pub struct Framer {
    lines: Lines,
    failed: Option<MapperError>,
}

impl Default for Framer {
    fn default() -> Self {
        Self { lines: Lines::new(MAX_FRAME_BYTES).too_long(oversized), failed: None }
    }
}

impl Framer {
    /// The frames of the lines `bytes` complete. A run of events for one session crosses as
    /// one input ([`joined::add`]): a read holds a few hundred streamed deltas.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        self.check_usable()?;
        let mut inbound = Vec::new();
        let result = self.lines.push(bytes, |line| add_frame(&mut inbound, line));
        self.remember_failure(result.map(|()| inbound))
    }

    /// End of stdout: a final line without a newline is still a frame.
    pub fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        self.check_usable()?;
        let mut inbound = Vec::new();
        let result = self.lines.finish(|line| add_frame(&mut inbound, line));
        self.remember_failure(result.map(|()| inbound))
    }

    fn check_usable(&self) -> Result<(), MapperError> {
        match &self.failed {
            Some(error) => {
                Err(protocol(format!("The native transport already failed: {}", error.message)))
            }
            None => Ok(()),
        }
    }

    fn remember_failure(
        &mut self,
        result: Result<Vec<Inbound>, MapperError>,
    ) -> Result<Vec<Inbound>, MapperError> {
        if let Err(error) = &result {
            self.failed = Some(error.clone());
            self.lines.clear();
        }
        result
    }
}

fn oversized(max: usize) -> MapperError {
    protocol(format!("Native protocol frame exceeded {max} bytes"))
}

/// Adds the frame of one line (without its line ending) to `inbound`; a blank line is none.
/// A streamed event's text is copied once, into the input that holds it.
fn add_frame(inbound: &mut Vec<Inbound>, line: &[u8]) -> Result<(), MapperError> {
    let text = zcode_mapper_sdk::text::utf8(line)
        .map_err(|_| protocol("Native protocol contained invalid UTF-8"))?;
    if text.trim().is_empty() {
        return Ok(());
    }
    if let Some((route, event)) = event_as_is(text) {
        joined::add_event(inbound, &route, event, |_, _| false);
        return Ok(());
    }
    let frame = match reply_as_is(text) {
        Some(reply) => reply,
        None => classify(
            &serde_json::from_str(text)
                .map_err(|_| protocol("Native stdout contained a non-JSON frame"))?,
        )?,
    };
    joined::add(inbound, frame, |_, _| false);
    Ok(())
}

/// The frame that comes by the thousand during a turn, `{"method": "event", "params":
/// {"subscriptionId", "event"}}`, read without building a tree of the event: its text is
/// routed as it came (`map-event` parses it anyway). Only a frame [`classify`] would accept as
/// an event is taken; anything else goes the general way, which has the errors. The one
/// difference is a number beyond f64's range: JSON, which the raw text keeps and a tree cannot
/// hold, so `map-event` is the one to refuse it (and a turn that gets one ends broken).
/// Its subscription (the route) and event text.
fn event_as_is(text: &str) -> Option<(Cow<'_, str>, &str)> {
    let (subscription_id, event) = compact_event(text).or_else(|| event_with_serde(text))?;
    (!subscription_id.is_empty() && event.starts_with('{')).then_some((subscription_id, event))
}

/// An event frame's subscription and event text, as `JSON.stringify` wrote them
/// (`zcode_mapper_sdk::compact`): the event is passed over, not read. `None` for anything the
/// serde read ([`event_with_serde`]) is to decide, which takes it as this read does.
fn compact_event(text: &str) -> Option<(Cow<'_, str>, &str)> {
    let mut reader = Reader::new(text);
    let (mut method, mut params, mut trace) = (None, None, None);
    reader.object(|r, name| match name {
        "method" => once(&mut method, r.plain_str().filter(|m| *m == "event")),
        "params" => {
            let (mut subscription_id, mut event) = (None, None);
            r.object(|r, name| match name {
                "subscriptionId" => once(&mut subscription_id, r.string()),
                "event" => once(&mut event, r.value_text()),
                _ => None,
            })?;
            once(&mut params, subscription_id.zip(event))
        }
        "trace" => once(&mut trace, r.value_text()),
        _ => None,
    })?;
    method?;
    reader.at_end().then_some(())?;
    params
}

/// [`compact_event`] with serde's readers.
fn event_with_serde(text: &str) -> Option<(Cow<'_, str>, &str)> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Frame<'a> {
        method: &'a str,
        #[serde(borrow)]
        params: Params<'a>,
        #[serde(default, borrow)]
        #[allow(dead_code)] // accepted, not used
        trace: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Params<'a> {
        #[serde(rename = "subscriptionId")]
        subscription_id: String,
        #[serde(borrow)]
        event: &'a RawValue,
    }
    let frame: Frame<'_> = serde_json::from_str(text).ok()?;
    let Params { subscription_id, event } = frame.params;
    (frame.method == "event").then(|| (Cow::Owned(subscription_id), event.get()))
}

/// A successful reply, `{"id", "result"}`, read without building a tree of the result: its
/// text is handed on as it came. A session's last read at the end of a turn returns the turn's
/// whole message, megabytes for a long one; as a tree, and written out again, it took several
/// times its size in the connection's memory (a 1 000 000-delta turn went over the call's
/// memory cap). Anything else goes the general way, which has the errors.
fn reply_as_is(text: &str) -> Option<Inbound> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Reply<'a> {
        id: u64,
        #[serde(borrow)]
        result: &'a RawValue,
    }
    let Reply { id, result } = serde_json::from_str(text).ok()?;
    let body = ReplyBody::Ok(NativeData::Text(result.get().to_string()));
    Some(Inbound::Reply(NativeReply { id, body }))
}

/// What a parsed frame means.
pub fn classify(frame: &Value) -> Result<Inbound, MapperError> {
    let Value::Object(map) = frame else {
        return Err(protocol("Native frame is not a JSON object"));
    };
    if let Some(method) = map.get("method") {
        let method = method.as_str().unwrap_or("<non-string method>");
        if map.contains_key("id") {
            return Err(protocol(format!("Unsupported native reverse request: {method}")));
        }
        if method != "event" {
            return Err(protocol(format!("Unsupported host notification: {method}")));
        }
        return event(frame);
    }
    let fields = Fields::native(frame, "Native response")?;
    let id = match map.get("id") {
        Some(Value::Null) if map.contains_key("error") => {
            let message = error_message(fields.object("error", "Native error")?)?;
            return Err(protocol(format!(
                "The host bridge reported an error for no request: {message}"
            )));
        }
        Some(id) => {
            id.as_u64().ok_or_else(|| protocol("Native response id is not a request id of ours"))?
        }
        None => return Err(protocol("Native frame has neither an id nor a method")),
    };
    let body = match (map.get("result"), map.get("error")) {
        (Some(result), None) => {
            fields.only(&["id", "result"])?;
            ReplyBody::Ok(NativeData::Text(result.to_string()))
        }
        (None, Some(_)) => {
            fields.only(&["id", "error"])?;
            ReplyBody::Error(native_error(fields.object("error", "Native error")?)?)
        }
        _ => return Err(protocol("Native response must carry exactly one of result and error")),
    };
    Ok(Inbound::Reply(NativeReply { id, body }))
}

fn event(frame: &Value) -> Result<Inbound, MapperError> {
    let fields = Fields::native(frame, "Native event notification")?;
    fields.only(&["method", "params", "trace"])?;
    let params = fields.object("params", "Native event params")?;
    params.only(&["subscriptionId", "event"])?;
    let route = params.non_empty_str("subscriptionId")?;
    let event = params.value("event")?;
    if !event.is_object() {
        return Err(protocol("Native event params: field `event` must be a JSON object"));
    }
    Ok(Inbound::Event(RoutedEvent {
        route: route.to_string(),
        payload: NativeData::Text(event.to_string()),
    }))
}

fn error_message<'a>(error: Fields<'a>) -> Result<&'a str, MapperError> {
    error.non_empty_str("message")
}

fn native_error(error: Fields<'_>) -> Result<MapperError, MapperError> {
    error.only(&["code", "message", "data"])?;
    let code = error
        .value("code")?
        .as_i64()
        .ok_or_else(|| protocol("Native error: field `code` must be an integer"))?;
    let message = error_message(error)?;
    Ok(MapperError {
        kind: ErrorKind::Native,
        message: message.to_string(),
        data: Some(json!({ "nativeCode": code }).to_string()),
    })
}

/// A bridge service, named as the bridge's protocol descriptor names it (the bridge maps it to
/// a host channel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Service(&'static str);

impl Service {
    /// Channel `zcode-agent`.
    pub const AGENT: Service = Service("agent");
    /// Channel `zcode-task`.
    pub const TASK: Service = Service("task");

    /// A service a generation adds (its bridge must allowlist it).
    pub const fn named(name: &'static str) -> Service {
        Service(name)
    }

    pub fn name(self) -> &'static str {
        self.0
    }
}

/// `{"id":N,"method":"__call","params":{"service","method","params"}}` and a newline.
pub fn call_bytes(id: u64, service: Service, method: &str, params: &Value) -> Vec<u8> {
    line(&json!({
        "id": id,
        "method": "__call",
        "params": {"service": service.name(), "method": method, "params": params},
    }))
}

/// `__subscribe` to a session's dynamic events, snapshot first.
pub fn subscribe_bytes(
    id: u64,
    subscription_id: &str,
    workspace: &str,
    session_id: &str,
) -> Vec<u8> {
    line(&json!({
        "id": id,
        "method": "__subscribe",
        "params": {
            "subscriptionId": subscription_id,
            "target": {
                "workspacePath": workspace,
                "sessionId": session_id,
                "deliveryKind": "desktop-continuous",
                "includeSnapshot": true,
            },
        },
    }))
}

pub fn unsubscribe_bytes(id: u64, subscription_id: &str) -> Vec<u8> {
    line(
        &json!({"id": id, "method": "__unsubscribe", "params": {"subscriptionId": subscription_id}}),
    )
}

fn line(value: &Value) -> Vec<u8> {
    let mut bytes = value.to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(id: u64, json: &str) -> Inbound {
        Inbound::Reply(NativeReply { id, body: ReplyBody::Ok(json.into()) })
    }

    fn message(result: Result<Vec<Inbound>, MapperError>) -> String {
        let error = result.unwrap_err();
        assert_eq!(error.kind, ErrorKind::Protocol);
        error.message
    }

    #[test]
    fn a_reply_is_handed_on_as_it_came_without_a_tree() {
        let mut framer = Framer::default();
        let result = format!("{{\"z\":1,\"a\":\"{}\"}}", "x".repeat(1 << 20));
        let frame = format!("{{\"id\":3,\"result\":{result}}}\n");
        // Key order kept: the text was not parsed into a (sorted) tree and written again.
        assert_eq!(framer.push(frame.as_bytes()).unwrap(), [reply(3, &result)]);
    }

    #[test]
    fn joins_partial_chunks_into_frames() {
        let mut framer = Framer::default();
        assert_eq!(framer.push(b"{\"id\":1,\"res").unwrap(), []);
        assert_eq!(framer.push(b"ult\":{\"a\":1}}").unwrap(), []);
        assert_eq!(
            framer.push(b"\n{\"id\":2,\"result\":null}\n{\"id\"").unwrap(),
            [reply(1, "{\"a\":1}"), reply(2, "null")]
        );
        assert_eq!(framer.push(b":3,\"result\":true}\n").unwrap(), [reply(3, "true")]);
    }

    #[test]
    fn strips_crlf_and_skips_blank_lines() {
        let mut framer = Framer::default();
        let frames = framer.push(b"\r\n  \n{\"id\":7,\"result\":[]}\r\n\n").unwrap();
        assert_eq!(frames, [reply(7, "[]")]);
    }

    #[test]
    fn parses_a_final_frame_without_newline() {
        let mut framer = Framer::default();
        assert_eq!(framer.push(b"{\"id\":4,\"result\":1}").unwrap(), []);
        assert_eq!(framer.finish().unwrap(), [reply(4, "1")]);
        assert_eq!(Framer::default().finish().unwrap(), []);
    }

    #[test]
    fn rejects_oversized_frames_and_buffers() {
        let mut framer = Framer::default();
        let big = vec![b' '; MAX_FRAME_BYTES + 1];
        assert_eq!(message(framer.push(&big)), "Native protocol frame exceeded 16777216 bytes");
        let mut framer = Framer::default();
        let mut line = vec![b' '; MAX_FRAME_BYTES + 1];
        line.push(b'\n');
        assert_eq!(message(framer.push(&line)), "Native protocol frame exceeded 16777216 bytes");
        // Exactly at the limit is fine (a blank line here).
        let mut framer = Framer::default();
        let mut line = vec![b' '; MAX_FRAME_BYTES];
        line.push(b'\n');
        assert_eq!(framer.push(&line).unwrap(), []);
    }

    #[test]
    fn rejects_invalid_utf8_and_non_json() {
        assert_eq!(
            message(Framer::default().push(b"{\"id\":1,\"result\":\"\xff\"}\n")),
            "Native protocol contained invalid UTF-8"
        );
        assert_eq!(
            message(Framer::default().push(b"hello\n")),
            "Native stdout contained a non-JSON frame"
        );
        assert_eq!(message(Framer::default().push(b"[1]\n")), "Native frame is not a JSON object");
        let mut framer = Framer::default();
        framer.push(b"nope").unwrap();
        assert_eq!(message(framer.finish()), "Native stdout contained a non-JSON frame");
    }

    #[test]
    fn stays_failed_after_an_error() {
        let mut framer = Framer::default();
        assert!(framer.push(b"x\n").is_err());
        assert_eq!(
            message(framer.push(b"{\"id\":1,\"result\":1}\n")),
            "The native transport already failed: Native stdout contained a non-JSON frame"
        );
    }

    #[test]
    fn classifies_errors_and_events() {
        let error =
            classify(&json!({"id": 2, "error": {"code": -32000, "message": "boom", "data": null}}))
                .unwrap();
        assert_eq!(
            error,
            Inbound::Reply(NativeReply {
                id: 2,
                body: ReplyBody::Error(MapperError {
                    kind: ErrorKind::Native,
                    message: "boom".to_string(),
                    data: Some("{\"nativeCode\":-32000}".to_string()),
                }),
            })
        );
        let event = classify(
            &json!({"method": "event", "params": {"subscriptionId": "s", "event": {"type": "x"}}}),
        )
        .unwrap();
        assert_eq!(
            event,
            Inbound::Event(RoutedEvent { route: "s".into(), payload: "{\"type\":\"x\"}".into() })
        );
    }

    #[test]
    fn fails_closed_on_unknown_shapes() {
        let cases = [
            (
                json!({"id": 1, "method": "interaction/unknown", "params": {}}),
                "Unsupported native reverse request: interaction/unknown",
            ),
            (
                json!({"method": "progress", "params": {}}),
                "Unsupported host notification: progress",
            ),
            (
                json!({"id": null, "error": {"code": -32700, "message": "Invalid JSON"}}),
                "The host bridge reported an error for no request: Invalid JSON",
            ),
            (json!({"id": "1", "result": 1}), "Native response id is not a request id of ours"),
            (json!({"id": 1}), "Native response must carry exactly one of result and error"),
            (
                json!({"id": 1, "result": 1, "error": {"code": 1, "message": "x"}}),
                "Native response must carry exactly one of result and error",
            ),
            (
                json!({"id": 1, "result": 1, "extra": true}),
                "Native response: unexpected field `extra`",
            ),
            (
                json!({"id": 1, "error": {"code": "x", "message": "m"}}),
                "Native error: field `code` must be an integer",
            ),
            (
                json!({"id": 1, "error": {"code": 1, "message": ""}}),
                "Native error: field `message` must not be empty",
            ),
            (json!({"result": 1}), "Native frame has neither an id nor a method"),
            (
                json!({"method": "event", "params": {"subscriptionId": "", "event": {}}}),
                "Native event params: field `subscriptionId` must not be empty",
            ),
            (
                json!({"method": "event", "params": {"subscriptionId": "s", "event": {}, "x": 1}}),
                "Native event params: unexpected field `x`",
            ),
            (
                json!({"method": "event", "params": {"subscriptionId": "s", "event": 3}}),
                "Native event params: field `event` must be a JSON object",
            ),
        ];
        for (frame, expected) in cases {
            let error = classify(&frame).unwrap_err();
            assert_eq!(error.message, expected, "{frame}");
            assert_eq!(error.kind, ErrorKind::Protocol);
            // The same line through the framer: the event fast path takes none of them.
            let error = Framer::default().push(format!("{frame}\n").as_bytes()).unwrap_err();
            assert_eq!(error.message, expected, "{frame}");
        }
        for line in [
            r#"{"method":"event","params":{"subscriptionId":"s","event":{}},"id":1}"#,
            r#"{"method":"event","params":{"subscriptionId":"s","event":[]}}"#,
            r#"{"method":"events","params":{"subscriptionId":"s","event":{}}}"#,
        ] {
            assert!(Framer::default().push(format!("{line}\n").as_bytes()).is_err(), "{line}");
        }
    }

    #[test]
    fn routes_event_text_as_it_came() {
        let line = br#"{"params": {"event": {"type": "x", "a": [1, 2]}, "subscriptionId": "s"}, "trace": {"t": 1}, "method": "event"}"#;
        let inbound = Framer::default().push(&[&line[..], b"\n"].concat()).unwrap();
        let event =
            RoutedEvent { route: "s".into(), payload: r#"{"type": "x", "a": [1, 2]}"#.into() };
        assert_eq!(inbound, [Inbound::Event(event)]);
        // An escaped method name is still an event, read the general way.
        let line =
            br#"{"method":"\u0065vent","params":{"subscriptionId":"s","event":{"type":"x"}}}"#;
        let inbound = Framer::default().push(&[&line[..], b"\n"].concat()).unwrap();
        let event = RoutedEvent { route: "s".into(), payload: r#"{"type":"x"}"#.into() };
        assert_eq!(inbound, [Inbound::Event(event)]);
    }

    /// Consecutive events for one session go on as one, a line each; a reply or another
    /// session's event between them ends the run.
    #[test]
    fn consecutive_events_for_one_session_are_joined() {
        let event = |route: &str, n: u32| {
            let event = format!(r#"{{"type":"x","n":{n}}}"#);
            format!(
                r#"{{"method":"event","params":{{"subscriptionId":"{route}","event":{event}}}}}"#
            )
        };
        let reply_line = r#"{"id":1,"result":null}"#.to_string();
        let lines =
            [event("a", 1), event("a", 2), reply_line, event("a", 3), event("b", 4), event("a", 5)];
        // The general reader's tree, in the middle of a run, is joined too.
        let general =
            r#"{"method":"event","params":{"event":{"type":"x","n":6},"subscriptionId":"a"}}"#;
        let stream = format!("{}\n{general}\n", lines.join("\n"));
        let joined = |route: &str, ns: &[u32]| {
            let texts: Vec<String> =
                ns.iter().map(|n| format!(r#"{{"type":"x","n":{n}}}"#)).collect();
            let payload = NativeData::Text(texts.join("\n"));
            Inbound::Event(RoutedEvent { route: route.into(), payload })
        };
        let expected = [
            joined("a", &[1, 2]),
            reply(1, "null"),
            joined("a", &[3]),
            joined("b", &[4]),
            joined("a", &[5, 6]),
        ];
        assert_eq!(Framer::default().push(stream.as_bytes()).unwrap(), expected);
        // Read by read, nothing is held back to join: each read's events go on.
        let mut framer = Framer::default();
        let first = framer.push(format!("{}\n", event("a", 1)).as_bytes()).unwrap();
        assert_eq!(first, [joined("a", &[1])]);
    }

    #[test]
    fn a_number_out_of_range_is_routed_as_it_came() {
        let event = r#"{"type":"x","timestamp":17570e9000000}"#;
        let line =
            format!(r#"{{"method":"event","params":{{"subscriptionId":"s","event":{event}}}}}"#);
        let inbound = Framer::default().push(format!("{line}\n").as_bytes()).unwrap();
        assert_eq!(
            inbound,
            [Inbound::Event(RoutedEvent { route: "s".into(), payload: event.into() })]
        );
    }

    #[test]
    fn builds_bridge_requests() {
        let bytes = call_bytes(5, Service::TASK, "stopGeneration", &json!({"taskId": "s"}));
        assert!(bytes.ends_with(b"\n"));
        let value: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            value,
            json!({"id": 5, "method": "__call", "params": {"service": "task", "method": "stopGeneration", "params": {"taskId": "s"}}})
        );
        let value: Value = serde_json::from_slice(&subscribe_bytes(1, "sub", "/w", "s")).unwrap();
        assert_eq!(
            value["params"]["target"],
            json!({"workspacePath": "/w", "sessionId": "s", "deliveryKind": "desktop-continuous", "includeSnapshot": true})
        );
        let value: Value = serde_json::from_slice(&unsubscribe_bytes(2, "sub")).unwrap();
        assert_eq!(
            value,
            json!({"id": 2, "method": "__unsubscribe", "params": {"subscriptionId": "sub"}})
        );
    }

    /// Values an edit puts in place of a member's, besides `edit::VALUES`.
    const VALUES: &[&str] = &[r#""event""#, r#"[{"a":1}]"#];

    /// Members an edit adds.
    const NAMES: &[&str] = &["x", "id", "trace", "event", "method", "subscriptionId"];

    proptest::proptest! {
        // Each case takes microseconds; an edit that matters is one in a few hundred.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

        /// Whatever is done to an event frame, the compact read takes it only as serde takes
        /// it (the same route and event text); and with its members in any order it is taken.
        #[test]
        fn an_event_frame_is_taken_only_as_serde_takes_it(
            swaps in proptest::collection::vec(proptest::prelude::any::<(usize, usize, usize)>(), 0..10),
            (kind, value, name) in (0usize..6, proptest::prelude::any::<usize>(), 0..NAMES.len()),
            object in proptest::prelude::any::<usize>(),
            member in proptest::prelude::any::<usize>(),
        ) {
            use zcode_mapper_sdk::compact::edit::{Edit, object as obj, raw, reads_alike};
            let event = obj(&[
                ("type", raw(r#""session.event""#)),
                ("event", obj(&[("seq", raw("3")), ("payload", obj(&[("delta", raw(r#""a\nb""#))]))])),
            ]);
            let params = obj(&[("subscriptionId", raw(r#""zcode-acp-1""#)), ("event", event)]);
            let frame =
                obj(&[("method", raw(r#""event""#)), ("params", params), ("trace", raw("null"))]);
            let show = |read: Option<(Cow<'_, str>, &str)>| read.map(|r| format!("{r:?}"));
            let both = |text: &str| (show(compact_event(text)), show(event_with_serde(text)));
            let edit = (object, member, Edit::pick(kind, value, VALUES, NAMES[name]));
            reads_alike(frame, &swaps, edit, both)
                .map_err(proptest::test_runner::TestCaseError::fail)?;
        }
    }
}
