//! Reading JSON strictly: typed field access with errors that name what was wrong, and the
//! error constructors every module uses.

use serde_json::{Map, Value};
use zcode_contract::{ErrorKind, MapperError};

pub fn error(kind: ErrorKind, message: impl Into<String>) -> MapperError {
    MapperError::new(kind, message)
}

pub fn protocol(message: impl Into<String>) -> MapperError {
    error(ErrorKind::Protocol, message)
}

pub fn invalid_params(message: impl Into<String>) -> MapperError {
    error(ErrorKind::InvalidParams, message)
}

pub fn internal(message: impl Into<String>) -> MapperError {
    error(ErrorKind::Internal, message)
}

pub fn native(message: impl Into<String>) -> MapperError {
    error(ErrorKind::Native, message)
}

/// JSON text of `value` (serde_json never fails on a `Value`). Large texts are measured first
/// and written into a buffer of exactly their size: a growing buffer doubles, and while it is
/// copied holds its old and new blocks, which for a multi-MiB update was most of the memory a
/// call may use (F-20).
pub fn text(value: &Value) -> String {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).expect("a Value always serializes");
    let mut out = Vec::with_capacity(count.0);
    serde_json::to_writer(&mut out, value).expect("a Value always serializes");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// JSON text with every object's keys in sorted order, whatever map serde_json was built with
/// (a workspace build of the mappers orders keys by insertion, a lone crate sorts them): the
/// bytes of a native request are then the same in every build, so recordings and golden
/// traces compare byte for byte. ZCode reads the keys in any order.
pub fn canonical_text(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (index, key) in keys.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Parses JSON text; a failure is an error of `kind` naming `what`.
pub fn parse(json: &str, kind: ErrorKind, what: &str) -> Result<Value, MapperError> {
    serde_json::from_str(json).map_err(|e| error(kind, format!("{what} is not valid JSON: {e}")))
}

/// Field access on one JSON object. Errors are protocol errors for native input and invalid
/// params for ACP input, and name the object.
#[derive(Clone, Copy)]
pub struct Fields<'a> {
    map: &'a Map<String, Value>,
    what: &'a str,
    kind: ErrorKind,
}

impl<'a> Fields<'a> {
    /// A native object (errors are protocol errors).
    pub fn native(value: &'a Value, what: &'a str) -> Result<Self, MapperError> {
        Self::of(value, what, ErrorKind::Protocol)
    }

    /// An ACP object (errors are invalid params).
    pub fn acp(value: &'a Value, what: &'a str) -> Result<Self, MapperError> {
        Self::of(value, what, ErrorKind::InvalidParams)
    }

    fn of(value: &'a Value, what: &'a str, kind: ErrorKind) -> Result<Self, MapperError> {
        match value {
            Value::Object(map) => Ok(Self { map, what, kind }),
            _ => Err(error(kind, format!("{what} must be a JSON object"))),
        }
    }

    fn fail(&self, message: String) -> MapperError {
        error(self.kind, format!("{}: {message}", self.what))
    }

    pub fn map(&self) -> &'a Map<String, Value> {
        self.map
    }

    /// Every key is one of `allowed`.
    pub fn only(&self, allowed: &[&str]) -> Result<(), MapperError> {
        match self.map.keys().find(|key| !allowed.contains(&key.as_str())) {
            Some(key) => Err(self.fail(format!("unknown field `{key}`"))),
            None => Ok(()),
        }
    }

    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    pub fn value(&self, key: &str) -> Result<&'a Value, MapperError> {
        self.map.get(key).ok_or_else(|| self.fail(format!("missing field `{key}`")))
    }

    pub fn str(&self, key: &str) -> Result<&'a str, MapperError> {
        match self.value(key)? {
            Value::String(text) => Ok(text),
            _ => Err(self.fail(format!("field `{key}` must be a string"))),
        }
    }

    pub fn non_empty_str(&self, key: &str) -> Result<&'a str, MapperError> {
        let text = self.str(key)?;
        if text.is_empty() {
            return Err(self.fail(format!("field `{key}` must not be empty")));
        }
        Ok(text)
    }

    /// Absent and `null` are `None`.
    pub fn opt_str(&self, key: &str) -> Result<Option<&'a str>, MapperError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(_) => Err(self.fail(format!("field `{key}` must be a string"))),
        }
    }

    pub fn bool(&self, key: &str) -> Result<bool, MapperError> {
        match self.value(key)? {
            Value::Bool(flag) => Ok(*flag),
            _ => Err(self.fail(format!("field `{key}` must be a boolean"))),
        }
    }

    pub fn opt_bool(&self, key: &str) -> Result<Option<bool>, MapperError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(flag)) => Ok(Some(*flag)),
            Some(_) => Err(self.fail(format!("field `{key}` must be a boolean"))),
        }
    }

    /// A non-negative integer (JSON numbers like `3.0` count).
    pub fn u64(&self, key: &str) -> Result<u64, MapperError> {
        let value = self.value(key)?;
        as_u64(value)
            .ok_or_else(|| self.fail(format!("field `{key}` must be a non-negative integer")))
    }

    pub fn opt_u64(&self, key: &str) -> Result<Option<u64>, MapperError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => as_u64(value)
                .map(Some)
                .ok_or_else(|| self.fail(format!("field `{key}` must be a non-negative integer"))),
        }
    }

    pub fn f64(&self, key: &str) -> Result<f64, MapperError> {
        self.value(key)?
            .as_f64()
            .ok_or_else(|| self.fail(format!("field `{key}` must be a number")))
    }

    pub fn opt_f64(&self, key: &str) -> Result<Option<f64>, MapperError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_f64()
                .map(Some)
                .ok_or_else(|| self.fail(format!("field `{key}` must be a number"))),
        }
    }

    pub fn array(&self, key: &str) -> Result<&'a Vec<Value>, MapperError> {
        match self.value(key)? {
            Value::Array(items) => Ok(items),
            _ => Err(self.fail(format!("field `{key}` must be an array"))),
        }
    }

    pub fn opt_array(&self, key: &str) -> Result<Option<&'a Vec<Value>>, MapperError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(items)) => Ok(Some(items)),
            Some(_) => Err(self.fail(format!("field `{key}` must be an array"))),
        }
    }

    /// A nested object, named `what` in its own errors.
    pub fn object(&self, key: &str, what: &'a str) -> Result<Fields<'a>, MapperError> {
        let value = self.value(key)?;
        Fields::of(value, what, self.kind)
    }

    pub fn opt_object(&self, key: &str, what: &'a str) -> Result<Option<Fields<'a>>, MapperError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => Fields::of(value, what, self.kind).map(Some),
        }
    }

    /// A string field whose value must be one of `allowed`.
    pub fn one_of(&self, key: &str, allowed: &[&'static str]) -> Result<&'static str, MapperError> {
        let value = self.str(key)?;
        allowed
            .iter()
            .find(|candidate| **candidate == value)
            .copied()
            .ok_or_else(|| self.fail(format!("unknown `{key}` value `{value}`")))
    }
}

/// A non-negative integer, also when written as a float without fraction (`3.0`).
pub fn as_u64(value: &Value) -> Option<u64> {
    if let Some(n) = value.as_u64() {
        return Some(n);
    }
    let f = value.as_f64()?;
    (f >= 0.0 && f.fract() == 0.0 && f <= 9_007_199_254_740_992.0).then_some(f as u64)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_the_object_and_field_in_errors() {
        let value = json!({"a": 1, "b": "x", "c": 2.0, "d": -1});
        let fields = Fields::native(&value, "thing").unwrap();
        assert_eq!(fields.str("a").unwrap_err().message, "thing: field `a` must be a string");
        assert_eq!(fields.str("z").unwrap_err().message, "thing: missing field `z`");
        assert_eq!(fields.u64("c").unwrap(), 2);
        assert!(fields.u64("d").is_err());
        assert_eq!(fields.only(&["a", "b"]).unwrap_err().message, "thing: unknown field `c`");
        assert_eq!(fields.one_of("b", &["y"]).unwrap_err().message, "thing: unknown `b` value `x`");
        assert_eq!(fields.one_of("b", &["x"]).unwrap(), "x");
        assert_eq!(fields.str("a").unwrap_err().kind, ErrorKind::Protocol);
        let acp = Fields::acp(&value, "params").unwrap();
        assert_eq!(acp.str("a").unwrap_err().kind, ErrorKind::InvalidParams);
        assert_eq!(
            Fields::native(&json!([1]), "x").err().unwrap().message,
            "x must be a JSON object"
        );
    }

    #[test]
    fn canonical_text_sorts_keys_at_every_depth() {
        let value: Value =
            serde_json::from_str(r#"{"b":1,"a":[{"z":null,"y":"\u00e9"}],"c":{"e":true,"d":2.5}}"#)
                .unwrap();
        assert_eq!(
            canonical_text(&value),
            r#"{"a":[{"y":"é","z":null}],"b":1,"c":{"d":2.5,"e":true}}"#
        );
        assert_eq!(serde_json::from_str::<Value>(&canonical_text(&value)).unwrap(), value);
    }
}
