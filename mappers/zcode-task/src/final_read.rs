//! The turn's final native read (`readSession` with `messageLimit: 1`, `ops::read_session`),
//! read without the text of its message. That one message is the whole turn — 12 MB for a
//! 1 000 000-delta turn — and the end of a turn only refreshes the cached snapshot, which reads
//! nothing of a message part but its `type` (`Snapshot::validate`; history is replayed from the
//! snapshot that opens a session, never from the cache). As a tree the text was copied twice
//! (the reply's tree, then the snapshot's parts) into memory that a WebAssembly instance never
//! gives back.
//!
//! The result comes out as the tree `Snapshot::parse` reads, each part cut down to `{"type":
//! ...}` (or `{}` where it has no string `type`), so the checks and their errors stay the ones
//! of the general read. A result of any other shape is read the general way, which has the
//! errors. The text skipped is still checked to be JSON, with the parser's syntax check only:
//! an escape naming a lone surrogate, or nesting deeper than a tree allows, is accepted there.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use zcode_mapper_sdk::contract::{MapperError, NativeReply};

use crate::ops;

/// The final read's result, each message part cut down to its type.
pub fn snapshot_value(reply: &NativeReply, label: &str) -> Result<Value, MapperError> {
    let text = zcode_mapper_sdk::ops::reply_text(reply, "ZCode", label)?;
    match without_part_text(text) {
        Some(value) => Ok(value),
        None => ops::reply_value(reply, label),
    }
}

/// `text` (a snapshot object) as a tree whose message parts hold only their type; `None` when
/// it is not an object with a `messages` array of objects with a `parts` array.
fn without_part_text(text: &str) -> Option<Value> {
    // `flatten` reads through `deserialize_map`: only objects, a repeated `messages` refused,
    // other repeated keys the last one kept, as in a tree.
    #[derive(Deserialize)]
    struct Snapshot {
        messages: Vec<Message>,
        #[serde(flatten)]
        rest: Map<String, Value>,
    }
    #[derive(Deserialize)]
    struct Message {
        parts: Vec<PartType>,
        #[serde(flatten)]
        rest: Map<String, Value>,
    }
    let Snapshot { messages, mut rest } = serde_json::from_str(text).ok()?;
    let messages = messages.into_iter().map(|Message { parts, mut rest }| {
        let parts = parts.into_iter().map(|PartType(part_type)| {
            let mut part = Map::new();
            if let Some(part_type) = part_type {
                part.insert("type".to_string(), Value::String(part_type));
            }
            Value::Object(part)
        });
        rest.insert("parts".to_string(), parts.collect());
        Value::Object(rest)
    });
    rest.insert("messages".to_string(), messages.collect());
    Some(Value::Object(rest))
}

/// The visitor methods of a value that is skipped: arrays and scalars read as `None`.
macro_rules! skip_other_values {
    () => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }

        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    };
}

/// A message part's `type` when it is a string; everything else in the part is skipped. Any
/// JSON value is a part (a tree read accepts any, and validation refuses those without a type).
struct PartType(Option<String>);

impl<'de> Deserialize<'de> for PartType {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PartVisitor).map(PartType)
    }
}

/// Reads a part, or the value of its `type` key: a string is kept, anything else skipped.
struct PartVisitor;

impl<'de> Visitor<'de> for PartVisitor {
    type Value = Option<String>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut part_type = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "type" {
                // The last `type` counts, as in a tree.
                part_type = map.next_value::<StringOrNone>()?.0;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(part_type)
    }

    skip_other_values!();

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// The value of a part's `type`: the string, or `None` for any other value (skipped).
struct StringOrNone(Option<String>);

impl<'de> Deserialize<'de> for StringOrNone {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TypeVisitor;
        impl<'de> Visitor<'de> for TypeVisitor {
            type Value = Option<String>;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str("any JSON value")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Some(text.to_string()))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(None)
            }

            skip_other_values!();
        }
        deserializer.deserialize_any(TypeVisitor).map(StringOrNone)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use zcode_mapper_sdk::contract::ReplyBody;

    use super::*;
    use crate::settings::Snapshot;
    use crate::test_support::{Plain, snapshot_json};
    use zcode_mapper_sdk::json::canonical;

    fn reply(text: String) -> NativeReply {
        NativeReply { id: 1, body: ReplyBody::Ok(text.into()) }
    }

    fn with_messages(messages: Value) -> Value {
        let mut snapshot = snapshot_json();
        snapshot["messages"] = messages;
        snapshot
    }

    fn parse(value: &Value) -> Result<Snapshot, MapperError> {
        use crate::session::Generation;
        Snapshot::parse(value, "readSession", Plain.snapshot_rules())
    }

    #[test]
    fn keeps_everything_but_the_text_of_the_parts() {
        let long = "a \"long\" turn\n".repeat(1000);
        let snapshot = with_messages(json!([{
            "info": {"messageId": "msg-9", "role": "assistant", "time": {"created": 1}},
            "parts": [
                {"type": "text", "text": long, "extra": {"deep": [1, {"x": null}]}},
                {"text": "no type"},
                {"type": 5},
                {"marker": 1},
                "a bare string",
                [1, 2]
            ],
            "unread": true
        }]));
        // A repeated key: the last one counts, as in a tree.
        let text = snapshot
            .to_string()
            .replace(r#"{"marker":1}"#, r#"{"type":"first","type":"reasoning"}"#);
        assert!(text.contains(r#""type":"first""#));
        let snapshot: Value = serde_json::from_str(&text).unwrap();
        let light = without_part_text(&text).expect("the light read applies");
        let mut expected = snapshot.clone();
        expected["messages"][0]["parts"] =
            json!([{"type": "text"}, {}, {}, {"type": "reasoning"}, {}, {}]);
        assert_eq!(canonical(&light), canonical(&expected));
        // Validation sees the same parts as in the tree: a part without a string type fails.
        assert_eq!(parse(&light).unwrap_err().message, parse(&snapshot).unwrap_err().message,);
        assert_eq!(
            parse(&light).unwrap_err().message,
            "Native result validation failed: readSession: a message part has no type"
        );
    }

    #[test]
    fn a_valid_final_read_caches_the_same_snapshot() {
        let snapshot = with_messages(json!([{
            "info": {"messageId": "msg-9", "role": "assistant"},
            "parts": [{"type": "text", "text": "done"}, {"type": "tool", "state": {"status": "completed"}}]
        }]));
        let value = snapshot_value(&reply(snapshot.to_string()), "agent.readSession").unwrap();
        let (light, full) = (parse(&value).unwrap(), parse(&snapshot).unwrap());
        assert_eq!(light.messages.len(), 1);
        assert_eq!(light.messages[0].info.message_id.as_deref(), Some("msg-9"));
        assert_eq!(light.messages[0].parts, [json!({"type": "text"}), json!({"type": "tool"})]);
        assert_eq!(
            (light.mode(), light.workspace(), light.session.session_id.as_str()),
            (full.mode(), full.workspace(), full.session.session_id.as_str())
        );
    }

    /// Any other shape is read the general way, with its errors.
    #[test]
    fn leaves_other_shapes_to_the_general_read() {
        let cases = [
            json!([1]),
            json!({"session": {}}),
            with_messages(json!(null)),
            with_messages(json!({"parts": []})),
            with_messages(json!([{"info": {"role": "user"}}])),
            with_messages(json!([{"info": {"role": "user"}, "parts": {"type": "text"}}])),
            with_messages(json!(["message"])),
        ];
        for case in cases {
            let text = case.to_string();
            assert!(without_part_text(&text).is_none(), "{text}");
            let general = ops::reply_value(&reply(text.clone()), "agent.readSession");
            assert_eq!(snapshot_value(&reply(text), "agent.readSession").ok(), general.ok());
        }
        let repeated = r#"{"messages":[],"messages":[]}"#;
        assert!(without_part_text(repeated).is_none());
        let broken = reply("{\"messages\":[".to_string());
        assert_eq!(
            snapshot_value(&broken, "agent.readSession").unwrap_err().message,
            ops::reply_value(&broken, "agent.readSession").unwrap_err().message
        );
        let lost = NativeReply { id: 1, body: ReplyBody::Lost("timed out".into()) };
        assert_eq!(
            snapshot_value(&lost, "agent.readSession").unwrap_err().message,
            "ZCode did not answer agent.readSession: timed out"
        );
    }
}
