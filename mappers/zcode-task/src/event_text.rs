//! A `session.event` read typed, borrowing from the event's text: the path of every streamed
//! delta. Reading the event into a `serde_json::Value` tree cost a map node and a `String` per
//! field, and allocations are what the WebAssembly build pays most for.
//!
//! This reader only accepts what the general reader in [`crate::events`] accepts and means the
//! same by it: the event's field set (unknown fields refused, required fields required, types
//! checked), and a `model.streaming` payload with nothing but its known fields, each of the
//! type the general reader wants. Anything else — an unknown or mistyped field, a duplicate key,
//! another dynamic event type — is `None`, and the general reader then produces the result, the
//! errors included, exactly as before. Everything is read before the mapping state is touched,
//! so falling back never sees a half-applied event.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// A JSON string, borrowed from the event's text unless it holds escapes. (A bare
/// `Option<Cow<str>>` field would always own its text: serde borrows a `Cow` only as a field of
/// its own.)
#[derive(Deserialize)]
#[serde(transparent)]
pub struct Text<'a>(#[serde(borrow)] pub Cow<'a, str>);

impl Text<'_> {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The text of an optional [`Text`].
pub fn opt_str<'s>(field: &'s Option<Text<'_>>) -> Option<&'s str> {
    field.as_ref().map(Text::as_str)
}

/// A session event whose every field has been checked.
pub struct SessionEvent<'a> {
    pub seq: u64,
    pub timestamp: f64,
    pub event_type: Text<'a>,
    pub payload: Payload<'a>,
}

/// The payload of a [`SessionEvent`].
pub enum Payload<'a> {
    Streaming(Streaming<'a>),
    /// Any other event type, as the tree its mapping reads.
    Tree(Value),
}

/// A `model.streaming` payload (ZCode 3.11.2 `kind`, `delta`, `assistantMessageId`,
/// `toolCallId`, `toolName`, `input`; /work/shared/reference/zcode-host-3.11.md §5).
pub struct Streaming<'a> {
    pub kind: Text<'a>,
    pub delta: Option<Text<'a>>,
    pub assistant_message_id: Option<Text<'a>>,
    pub tool_call_id: Option<Text<'a>>,
    pub tool_name: Option<Text<'a>>,
    /// A `tool_call`'s input, the one part that is kept as a tree.
    pub input: Option<Value>,
}

mod compact;

/// The dynamic event `{"type": "session.event", "event": {...}}` read typed, or `None` when
/// the general reader has to decide. A streamed delta as ZCode writes it is read without
/// serde's readers first ([`compact`]), which takes an event only as the serde read would.
pub fn read(text: &str) -> Option<SessionEvent<'_>> {
    compact::read(text).or_else(|| read_with_serde(text))
}

/// The streamed delta's event `text` starts with, as ZCode writes one ([`compact`]), and its
/// length: the text ends there or goes on after a newline. `None` for anything else, which
/// the caller then finds the end of and reads as an event ([`read`]).
pub fn read_leading(text: &str) -> Option<(SessionEvent<'_>, usize)> {
    compact::read_leading(text)
}

/// [`read`] with serde's readers only.
fn read_with_serde(text: &str) -> Option<SessionEvent<'_>> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Dynamic<'a> {
        #[serde(rename = "type", borrow)]
        event_type: Text<'a>,
        // Read in the same pass: a `RawValue` here would scan the event twice.
        #[serde(borrow)]
        event: Object<Event<'a>>,
    }
    // The same fields as `events::session_event` checks, with the types it wants; `Option`
    // where it reads `null` as absent.
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)] // checked, not used
    struct Event<'a> {
        #[serde(borrow)]
        event_id: Text<'a>,
        #[serde(borrow)]
        session_id: Text<'a>,
        #[serde(borrow)]
        turn_id: Option<Text<'a>>,
        seq: u64,
        #[serde(borrow)]
        trace_id: Option<Text<'a>>,
        timestamp: f64,
        #[serde(borrow)]
        delivery_kind: Text<'a>,
        #[serde(rename = "type", borrow)]
        event_type: Text<'a>,
        #[serde(borrow)]
        payload: &'a RawValue,
    }

    let Object(dynamic): Object<Dynamic<'_>> = serde_json::from_str(text).ok()?;
    if dynamic.event_type.as_str() != "session.event" {
        return None;
    }
    let Object(event) = dynamic.event;
    if event.event_id.as_str().is_empty() || event.event_type.as_str().is_empty() {
        return None;
    }
    let payload = if event.event_type.as_str() == "model.streaming" {
        Payload::Streaming(streaming(event.payload.get())?)
    } else {
        if !event.payload.get().starts_with('{') {
            return None;
        }
        Payload::Tree(serde_json::from_str(event.payload.get()).ok()?)
    };
    Some(SessionEvent {
        seq: event.seq,
        timestamp: event.timestamp,
        event_type: event.event_type,
        payload,
    })
}

fn streaming(text: &str) -> Option<Streaming<'_>> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Payload<'a> {
        #[serde(borrow)]
        kind: Text<'a>,
        #[serde(borrow)]
        delta: Option<Text<'a>>,
        #[serde(borrow)]
        assistant_message_id: Option<Text<'a>>,
        #[serde(borrow)]
        tool_call_id: Option<Text<'a>>,
        #[serde(borrow)]
        tool_name: Option<Text<'a>>,
        #[serde(borrow)]
        input: Option<&'a RawValue>,
    }
    let Object(payload): Object<Payload<'_>> = serde_json::from_str(text).ok()?;
    let input = match payload.input {
        Some(input) => Some(serde_json::from_str(input.get()).ok()?),
        None => None,
    };
    Some(Streaming {
        kind: payload.kind,
        delta: payload.delta,
        assistant_message_id: payload.assistant_message_id,
        tool_call_id: payload.tool_call_id,
        tool_name: payload.tool_name,
        input,
    })
}

/// A `T` read from a JSON object only. A derived struct also reads a JSON array, field by
/// field; the general reader refuses one.
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = T;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_map(ObjectVisitor(PhantomData)).map(Object)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn delta_event(payload: Value) -> Value {
        json!({"type": "session.event", "event": {
            "eventId": "e-1", "sessionId": "s", "turnId": "t", "seq": 7, "traceId": "x",
            "timestamp": 1_757_000_000_000_u64, "deliveryKind": "desktop-continuous",
            "type": "model.streaming", "payload": payload,
        }})
    }

    fn streaming_of(event: SessionEvent<'_>) -> Streaming<'_> {
        match event.payload {
            Payload::Streaming(streaming) => streaming,
            Payload::Tree(_) => panic!("a model.streaming payload read as a tree"),
        }
    }

    #[test]
    fn reads_a_text_delta_borrowed_from_its_text() {
        let text = r#"{"type":"session.event","event":{"eventId":"e","sessionId":"s","seq":3,"timestamp":1.5,"deliveryKind":"d","type":"model.streaming","payload":{"kind":"text_delta","delta":"plain","assistantMessageId":"m"}}}"#;
        let event = read(text).expect("a well-formed delta is read typed");
        assert_eq!(
            (event.seq, event.timestamp, event.event_type.as_str()),
            (3, 1.5, "model.streaming")
        );
        let streaming = streaming_of(event);
        assert!(matches!(streaming.delta, Some(Text(Cow::Borrowed("plain")))));
        assert!(matches!(streaming.assistant_message_id, Some(Text(Cow::Borrowed("m")))));
        assert_eq!(streaming.kind.as_str(), "text_delta");
        assert!(streaming.tool_call_id.is_none() && streaming.input.is_none());
    }

    #[test]
    fn decodes_escapes_in_the_delta() {
        let delta = "a \"quoted\" \\ back\nslash \u{e9} \u{1F600} </tag> \u{1}";
        let text = delta_event(json!({"kind": "text_delta", "delta": delta})).to_string();
        // Escaped by hand too: `\/` and `\u` escapes that serde_json itself never writes.
        let by_hand = text.replace("</tag>", r"<\/tag>").replace('\u{e9}', r"\u00e9");
        for text in [text, by_hand] {
            let streaming = streaming_of(read(&text).expect("read typed"));
            assert_eq!(opt_str(&streaming.delta), Some(delta));
        }
    }

    #[test]
    fn reads_other_event_types_with_a_payload_tree() {
        let mut event = delta_event(json!({"resultType": "success"}));
        event["event"]["type"] = json!("turn.completed");
        let text = event.to_string();
        match read(&text).expect("read typed").payload {
            Payload::Tree(tree) => assert_eq!(tree, json!({"resultType": "success"})),
            Payload::Streaming(_) => panic!("a turn.completed payload read as a stream"),
        }
    }

    #[test]
    fn keeps_a_tool_calls_input_and_reads_null_as_absent() {
        let event = delta_event(json!({"kind": "tool_call", "toolCallId": "t", "toolName": "Bash",
            "input": {"command": "ls"}, "delta": null, "assistantMessageId": null}));
        let text = event.to_string();
        let streaming = streaming_of(read(&text).expect("read typed"));
        assert_eq!(streaming.input, Some(json!({"command": "ls"})));
        assert_eq!(opt_str(&streaming.tool_name), Some("Bash"));
        assert!(streaming.delta.is_none() && streaming.assistant_message_id.is_none());
    }

    /// What the typed reader leaves to the general one: it must never accept them.
    #[test]
    fn leaves_everything_unusual_to_the_general_reader() {
        let good = delta_event(json!({"kind": "text_delta", "delta": "x"}));
        assert!(read(&good.to_string()).is_some());
        let mut cases: Vec<(&str, Value)> = Vec::new();
        let mut with = |what, change: &dyn Fn(&mut Value)| {
            let mut event = good.clone();
            change(&mut event);
            cases.push((what, event));
        };
        with("unknown dynamic field", &|e| e["extra"] = json!(1));
        with("unknown event field", &|e| e["event"]["x"] = json!(1));
        with("unknown payload field", &|e| e["event"]["payload"]["partId"] = json!("p"));
        with("another dynamic type", &|e| e["type"] = json!("snapshot"));
        with("missing eventId", &|e| drop(e["event"].as_object_mut().unwrap().remove("eventId")));
        with("missing timestamp", &|e| {
            drop(e["event"].as_object_mut().unwrap().remove("timestamp"))
        });
        with("missing kind", &|e| {
            drop(e["event"]["payload"].as_object_mut().unwrap().remove("kind"))
        });
        with("null sessionId", &|e| e["event"]["sessionId"] = Value::Null);
        with("null timestamp", &|e| e["event"]["timestamp"] = Value::Null);
        with("null payload", &|e| e["event"]["payload"] = Value::Null);
        with("empty eventId", &|e| e["event"]["eventId"] = json!(""));
        with("empty type", &|e| e["event"]["type"] = json!(""));
        with("negative seq", &|e| e["event"]["seq"] = json!(-1));
        with("fractional seq", &|e| e["event"]["seq"] = json!(1.5));
        with("string seq", &|e| e["event"]["seq"] = json!("1"));
        with("string timestamp", &|e| e["event"]["timestamp"] = json!("now"));
        with("numeric turnId", &|e| e["event"]["turnId"] = json!(1));
        with("numeric delta", &|e| e["event"]["payload"]["delta"] = json!(5));
        with("numeric messageId", &|e| e["event"]["payload"]["assistantMessageId"] = json!(5));
        with("array event", &|e| {
            let fields: Vec<Value> = e["event"].as_object().unwrap().values().cloned().collect();
            e["event"] = Value::Array(fields);
        });
        with("array payload", &|e| e["event"]["payload"] = json!(["text_delta", "x"]));
        for (what, event) in &cases {
            assert!(read(&event.to_string()).is_none(), "{what}: read typed");
        }
        let array = r#"["session.event",{"eventId":"e"}]"#;
        assert!(read(array).is_none(), "a top-level array");
        let duplicate =
            good.to_string().replacen(r#""delta":"x""#, r#""delta":"x","delta":"y""#, 1);
        assert!(read(&duplicate).is_none(), "a duplicate key");
    }
}
