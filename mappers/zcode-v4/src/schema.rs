//! Reading ZCode's V4 shapes as strictly as ZCode's own schemas (zod `.strict()` objects,
//! enums, JavaScript numbers): typed field access with errors that name the object and field.
//!
//! Next to the SDK's `json::Fields` this reader refuses an unknown key with the words the
//! golden traces hold (`unknown field`), reads a string enum ([`Fields::one_of`]), a required
//! number ([`Fields::f64`]), an integer written as a float ([`as_u64`]: JavaScript has one
//! number type), and treats `null` in a required field as the wrong type, not as missing.

use serde_json::{Map, Value};
use zcode_contract::{ErrorKind, MapperError};
use zcode_mapper_sdk::json::error;

/// ZCode reported a failure (`ErrorKind::Native`).
pub fn native(message: impl Into<String>) -> MapperError {
    error(ErrorKind::Native, message)
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
}
