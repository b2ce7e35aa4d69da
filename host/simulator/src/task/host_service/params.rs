//! Reading a host method's single params object, with errors that name the method and key.

use serde_json::Value;

pub struct Params<'a> {
    value: &'a Value,
    method: &'a str,
}

impl<'a> Params<'a> {
    pub fn new(method: &'a str, value: &'a Value) -> Result<Params<'a>, String> {
        if value.is_object() {
            Ok(Params { value, method })
        } else {
            Err(format!("{method}: params must be an object"))
        }
    }

    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.value.get(key).filter(|value| !value.is_null())
    }

    pub fn string(&self, key: &str) -> Result<&'a str, String> {
        match self.get(key).and_then(Value::as_str) {
            Some(text) if !text.is_empty() => Ok(text),
            _ => Err(format!("{}: `{key}` must be a non-empty string", self.method)),
        }
    }

    pub fn optional_string(&self, key: &str) -> Result<Option<&'a str>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(_) => Err(format!("{}: `{key}` must be a string", self.method)),
        }
    }

    pub fn optional_u64(&self, key: &str) -> Result<Option<u64>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(value) => value
                .as_u64()
                .map(Some)
                .ok_or_else(|| format!("{}: `{key}` must be a non-negative integer", self.method)),
        }
    }

    /// The absolute `workspacePath` every host method is scoped by.
    pub fn workspace(&self) -> Result<&'a str, String> {
        let path = self.string("workspacePath")?;
        if std::path::Path::new(path).is_absolute() {
            Ok(path)
        } else {
            Err(format!("{}: workspacePath must be absolute: {path}", self.method))
        }
    }
}
