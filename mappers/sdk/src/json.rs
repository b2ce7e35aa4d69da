//! Small helpers for reading JSON objects field by field with clear errors.
//!
//! Native data is validated with `ErrorKind::Protocol` (the host broke the contract) and ACP
//! request parameters with `ErrorKind::InvalidParams` (the client sent something wrong), so the
//! reader carries the kind to use.

use serde_json::{Map, Value};
use zcode_contract::{ErrorKind, MapperError};

pub fn error(kind: ErrorKind, message: impl Into<String>) -> MapperError {
    MapperError::new(kind, message)
}

pub fn protocol(message: impl Into<String>) -> MapperError {
    MapperError::new(ErrorKind::Protocol, message)
}

pub fn invalid_params(message: impl Into<String>) -> MapperError {
    MapperError::new(ErrorKind::InvalidParams, message)
}

pub fn internal(message: impl Into<String>) -> MapperError {
    MapperError::new(ErrorKind::Internal, message)
}

/// Parses JSON text, reporting failures with `kind`.
pub fn parse(text: &str, kind: ErrorKind, what: &str) -> Result<Value, MapperError> {
    serde_json::from_str(text).map_err(|e| {
        // `1e400` is JSON (V8 reads it as Infinity), but no tree here can hold it.
        let problem = if e.to_string().starts_with("number out of range") {
            "holds a number out of range"
        } else {
            "is not valid JSON"
        };
        error(kind, format!("{what} {problem}"))
    })
}

/// JSON text of a value built by the mapper (serialising a `Value` cannot fail). A large value
/// costs one copy of itself, not a buffer that doubled its way there (see [`append`]).
pub fn text(value: &Value) -> String {
    let mut text = String::new();
    append(&mut text, value);
    text
}

/// Appends a value's JSON text to `out`, written in place. A large value (a tool's input that
/// holds a written file) gets exactly its length reserved, plus room for the few keys and
/// brackets that usually follow it: a string grown by doubling would hold up to three times
/// the value for a moment, and a component's memory never shrinks (docs/reliability.md, F-20).
pub fn append(out: &mut String, value: &Value) {
    const LARGE: usize = 64 * 1024;
    const ROOM_AFTER: usize = 4 * 1024;
    /// Counts what would be written.
    struct Length(usize);
    impl std::fmt::Write for Length {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0 += s.len();
            Ok(())
        }
    }
    use std::fmt::Write as _;
    let mut length = Length(0);
    let _ = write!(length, "{value}");
    if length.0 >= LARGE {
        out.reserve_exact(length.0 + ROOM_AFTER);
    } else {
        out.reserve(length.0);
    }
    let _ = write!(out, "{value}");
}

/// JSON text with keys sorted at every level. `serde_json` keeps insertion order or sorts
/// depending on the features a build unifies (a test dependency can switch it), so text that is
/// compared byte for byte — inside a binary frame, in a digest — must not depend on it.
pub fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter().map(|key| (key.clone(), sorted(&map[key]))).collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// A JSON object being read, named `what` in error messages.
#[derive(Clone, Copy)]
pub struct Fields<'a> {
    what: &'a str,
    kind: ErrorKind,
    map: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    pub fn new(value: &'a Value, kind: ErrorKind, what: &'a str) -> Result<Self, MapperError> {
        match value {
            Value::Object(map) => Ok(Self { what, kind, map }),
            _ => Err(error(kind, format!("{what} must be a JSON object"))),
        }
    }

    /// Native data: a violation is a protocol error.
    pub fn native(value: &'a Value, what: &'a str) -> Result<Self, MapperError> {
        Self::new(value, ErrorKind::Protocol, what)
    }

    /// ACP request parameters: a violation is an invalid-params error.
    pub fn acp(value: &'a Value, what: &'a str) -> Result<Self, MapperError> {
        Self::new(value, ErrorKind::InvalidParams, what)
    }

    fn fail(&self, message: String) -> MapperError {
        error(self.kind, format!("{}: {message}", self.what))
    }

    /// Strict objects: any key outside `allowed` is an error. The alphabetically first one is
    /// named, so the message does not depend on how a build orders maps.
    pub fn only(&self, allowed: &[&str]) -> Result<(), MapperError> {
        match self.map.keys().filter(|key| !allowed.contains(&key.as_str())).min() {
            Some(key) => Err(self.fail(format!("unexpected field `{key}`"))),
            None => Ok(()),
        }
    }

    /// The value of `key`, treating `null` as absent.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|value| !value.is_null())
    }

    pub fn value(&self, key: &str) -> Result<&'a Value, MapperError> {
        self.map.get(key).ok_or_else(|| self.fail(format!("missing field `{key}`")))
    }

    pub fn str(&self, key: &str) -> Result<&'a str, MapperError> {
        match self.get(key) {
            Some(Value::String(text)) => Ok(text),
            Some(_) => Err(self.fail(format!("field `{key}` must be a string"))),
            None => Err(self.fail(format!("missing field `{key}`"))),
        }
    }

    pub fn non_empty_str(&self, key: &str) -> Result<&'a str, MapperError> {
        let text = self.str(key)?;
        if text.is_empty() {
            return Err(self.fail(format!("field `{key}` must not be empty")));
        }
        Ok(text)
    }

    pub fn opt_str(&self, key: &str) -> Result<Option<&'a str>, MapperError> {
        match self.get(key) {
            Some(Value::String(text)) => Ok(Some(text)),
            Some(_) => Err(self.fail(format!("field `{key}` must be a string"))),
            None => Ok(None),
        }
    }

    pub fn opt_bool(&self, key: &str) -> Result<Option<bool>, MapperError> {
        match self.get(key) {
            Some(Value::Bool(flag)) => Ok(Some(*flag)),
            Some(_) => Err(self.fail(format!("field `{key}` must be a boolean"))),
            None => Ok(None),
        }
    }

    pub fn bool(&self, key: &str) -> Result<bool, MapperError> {
        self.opt_bool(key)?.ok_or_else(|| self.fail(format!("missing field `{key}`")))
    }

    pub fn opt_u64(&self, key: &str) -> Result<Option<u64>, MapperError> {
        match self.get(key) {
            Some(value) => value
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.fail(format!("field `{key}` must be a non-negative integer"))),
            None => Ok(None),
        }
    }

    pub fn u64(&self, key: &str) -> Result<u64, MapperError> {
        self.opt_u64(key)?.ok_or_else(|| self.fail(format!("missing field `{key}`")))
    }

    pub fn opt_f64(&self, key: &str) -> Result<Option<f64>, MapperError> {
        match self.get(key) {
            Some(value) => value
                .as_f64()
                .map(Some)
                .ok_or_else(|| self.fail(format!("field `{key}` must be a number"))),
            None => Ok(None),
        }
    }

    pub fn opt_array(&self, key: &str) -> Result<Option<&'a Vec<Value>>, MapperError> {
        match self.get(key) {
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(_) => Err(self.fail(format!("field `{key}` must be an array"))),
            None => Ok(None),
        }
    }

    pub fn array(&self, key: &str) -> Result<&'a Vec<Value>, MapperError> {
        self.opt_array(key)?.ok_or_else(|| self.fail(format!("missing field `{key}`")))
    }

    pub fn opt_object(&self, key: &str, what: &'a str) -> Result<Option<Self>, MapperError> {
        match self.get(key) {
            Some(value) => Self::new(value, self.kind, what).map(Some),
            None => Ok(None),
        }
    }

    pub fn object(&self, key: &str, what: &'a str) -> Result<Self, MapperError> {
        self.opt_object(key, what)?.ok_or_else(|| self.fail(format!("missing field `{key}`")))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn writes_a_large_value_into_a_string_not_much_larger_than_its_text() {
        let value = json!({"content": "w".repeat(1 << 20), "n": [1, 2]});
        let written = text(&value);
        assert_eq!(written, value.to_string());
        assert!(written.capacity() < written.len() + 8 * 1024, "{}", written.capacity());
        let mut out = String::from("{\"v\":");
        append(&mut out, &json!([1, "two"]));
        assert_eq!(out, "{\"v\":[1,\"two\"]");
    }

    #[test]
    fn says_why_text_cannot_be_read() {
        let message = |text| parse(text, ErrorKind::Protocol, "Thing").unwrap_err().message;
        assert_eq!(message("{\"a\":"), "Thing is not valid JSON");
        assert_eq!(message("{\"a\":1e400}"), "Thing holds a number out of range");
        assert_eq!(message("[-1e309]"), "Thing holds a number out of range");
        assert_eq!(parse("[1e-400]", ErrorKind::Protocol, "Thing").unwrap(), json!([0.0]));
    }

    #[test]
    fn reports_the_object_and_field_in_errors() {
        let value = json!({"a": 1, "b": "x", "n": null});
        let fields = Fields::native(&value, "thing").unwrap();
        assert_eq!(fields.str("a").unwrap_err().message, "thing: field `a` must be a string");
        assert_eq!(fields.str("zz").unwrap_err().message, "thing: missing field `zz`");
        assert_eq!(fields.str("zz").unwrap_err().kind, ErrorKind::Protocol);
        assert_eq!(fields.opt_str("n").unwrap(), None);
        assert_eq!(fields.only(&["a", "b"]).unwrap_err().message, "thing: unexpected field `n`");
        assert!(fields.only(&["a", "b", "n"]).is_ok());
        let acp = Fields::acp(&value, "params").unwrap();
        assert_eq!(acp.u64("b").unwrap_err().kind, ErrorKind::InvalidParams);
        assert_eq!(
            Fields::acp(&json!([]), "params").err().unwrap().message,
            "params must be a JSON object"
        );
    }

    #[test]
    fn canonical_text_sorts_keys_at_every_level() {
        let mut inner = Map::new();
        inner.insert("z".into(), json!(1));
        inner.insert("a".into(), json!([{"y": 1, "b": 2}]));
        let mut outer = Map::new();
        outer.insert("m".into(), Value::Object(inner));
        outer.insert("c".into(), json!(null));
        assert_eq!(
            canonical(&Value::Object(outer)),
            r#"{"c":null,"m":{"a":[{"b":2,"y":1}],"z":1}}"#
        );
    }

    #[test]
    fn rejects_empty_strings_where_required() {
        let value = json!({"id": ""});
        let fields = Fields::native(&value, "x").unwrap();
        assert_eq!(
            fields.non_empty_str("id").unwrap_err().message,
            "x: field `id` must not be empty"
        );
    }
}
