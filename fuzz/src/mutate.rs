//! Structure-aware mutation of JSON values, driven by fuzzer bytes: pick a place in the value,
//! then delete it, replace it, or rename a `type`/`kind` to something the mapper has never
//! seen.

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Value, json};

/// Strings the mapper gives meaning to: swapping them in reaches deep branches quickly.
const KNOWN_WORDS: &[&str] = &[
    "session.event",
    "snapshot",
    "state.updated",
    "permission.request",
    "userInput.request",
    "userInput.response",
    "providerRuntimeHeaders.request",
    "model.streaming",
    "tool.updated",
    "turn.completed",
    "turn.failed",
    "turn.started",
    "session.titleUpdated",
    "permission.requested",
    "permission.resolved",
    "text_delta",
    "reasoning_delta",
    "tool_input_start",
    "tool_input_delta",
    "tool_input_end",
    "tool_call",
    "scheduled",
    "started",
    "progress",
    "result",
    "error",
    "batch",
    "success",
    "cancelled",
    "max_tokens",
    "refusal",
    "allow",
    "deny",
    "reject_once",
    "allow_once",
    "tool-1",
    "perm-1",
    "ses-7f3a",
    "",
];

/// A name no ZCode release uses; an event carrying it must fail loudly.
pub const INVENTED_PREFIX: &str = "fuzz.invented.";

/// Applies `rounds` random mutations to `value`.
pub fn mutate(u: &mut Unstructured<'_>, value: &mut Value, rounds: usize) -> Result<()> {
    for _ in 0..rounds {
        let target = pick(u, value)?;
        match u.int_in_range(0..=9u8)? {
            0 | 1 => *target = any_value(u, 2)?,
            2 => *target = json!(*u.choose(KNOWN_WORDS)?),
            3 => remove_a_key(u, target)?,
            4 => {
                if let Value::Object(map) = target {
                    let key = u.choose(&["type", "kind", "seq", "toolCallId", "requestId"])?;
                    map.insert(key.to_string(), any_value(u, 1)?);
                }
            }
            5 | 6 => {
                if let Some(Value::String(name)) = type_slot(target) {
                    *name = invented_name(u)?;
                }
            }
            7 => {
                if let Value::Number(number) = target {
                    let bump = u.int_in_range(-3..=7i64)?;
                    *target = json!(number.as_i64().unwrap_or(0).saturating_add(bump));
                }
            }
            8 => {
                if let Value::Array(items) = target
                    && !items.is_empty()
                {
                    let copy = items[u.choose_index(items.len())?].clone();
                    items.push(copy);
                }
            }
            _ => {
                if let Value::String(text) = target {
                    text.push_str(&String::arbitrary_take(u)?);
                }
            }
        }
    }
    Ok(())
}

/// A type name no ZCode release uses.
pub fn invented_name(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(format!("{INVENTED_PREFIX}{}", u.int_in_range(0..=999u16)?))
}

trait TakeString {
    fn arbitrary_take(u: &mut Unstructured<'_>) -> Result<String>;
}

impl TakeString for String {
    fn arbitrary_take(u: &mut Unstructured<'_>) -> Result<String> {
        let len = u.int_in_range(0..=16usize)?;
        let mut text = String::new();
        for _ in 0..len {
            text.push(u.arbitrary::<char>()?);
        }
        Ok(text)
    }
}

/// The `type` of an event object, or the `kind` of a payload, if `value` has one.
fn type_slot(value: &mut Value) -> Option<&mut Value> {
    let map = value.as_object_mut()?;
    if map.contains_key("type") { map.get_mut("type") } else { map.get_mut("kind") }
}

/// Walks down from the root, stopping at a random depth.
fn pick<'v>(u: &mut Unstructured<'_>, value: &'v mut Value) -> Result<&'v mut Value> {
    let stop_here = u.ratio(1u8, 3u8)?;
    let children = match value {
        Value::Object(map) => map.len(),
        Value::Array(items) => items.len(),
        _ => 0,
    };
    if stop_here || children == 0 {
        return Ok(value);
    }
    let index = u.choose_index(children)?;
    match value {
        Value::Object(map) => pick(u, map.values_mut().nth(index).expect("index in range")),
        Value::Array(items) => pick(u, &mut items[index]),
        _ => unreachable!("only containers have children"),
    }
}

fn remove_a_key(u: &mut Unstructured<'_>, value: &mut Value) -> Result<()> {
    if let Value::Object(map) = value
        && !map.is_empty()
    {
        let key = map.keys().nth(u.choose_index(map.len())?).cloned().expect("index in range");
        map.remove(&key);
    }
    Ok(())
}

/// A small arbitrary JSON value.
pub fn any_value(u: &mut Unstructured<'_>, depth: u8) -> Result<Value> {
    let top = if depth == 0 { 5 } else { 7 };
    Ok(match u.int_in_range(0..=top)? {
        0 => Value::Null,
        1 => json!(u.arbitrary::<bool>()?),
        2 => json!(u.arbitrary::<i64>()?),
        // Non-finite numbers become null, as in any JSON encoder.
        3 => json!(u.arbitrary::<f64>()?),
        4 => json!(*u.choose(KNOWN_WORDS)?),
        5 => json!(String::arbitrary_take(u)?),
        6 => {
            let len = u.int_in_range(0..=3usize)?;
            let mut items = Vec::with_capacity(len);
            for _ in 0..len {
                items.push(any_value(u, depth - 1)?);
            }
            Value::Array(items)
        }
        _ => {
            let len = u.int_in_range(0..=3usize)?;
            let mut map = Map::new();
            for _ in 0..len {
                let key = *u.choose(&["type", "kind", "delta", "toolCallId", "x", "event"])?;
                map.insert(key.to_string(), any_value(u, depth - 1)?);
            }
            Value::Object(map)
        }
    })
}
