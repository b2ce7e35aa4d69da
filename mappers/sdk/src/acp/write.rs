//! JSON text written directly, without a `serde_json::Value` tree: the ACP builders put an
//! update together field by field. Strings are escaped exactly as `serde_json` escapes them
//! (a test compares the two), values the mapper already holds as trees are written by
//! `serde_json`.

use std::fmt::Write as _;

use serde_json::Value;

use crate::compact::plain_len;

/// A JSON object being written: `{`, then each field, then `}` from [`Obj::end`].
pub(crate) struct Obj {
    text: String,
    empty: bool,
}

impl Obj {
    pub fn new() -> Self {
        Self::with_capacity(64)
    }

    pub fn with_capacity(capacity: usize) -> Self {
        let mut text = String::with_capacity(capacity);
        text.push('{');
        Self { text, empty: true }
    }

    fn key(&mut self, key: &str) -> &mut String {
        if !self.empty {
            self.text.push(',');
        }
        self.empty = false;
        string(&mut self.text, key);
        self.text.push(':');
        &mut self.text
    }

    pub fn str(mut self, key: &str, value: &str) -> Self {
        string(self.key(key), value);
        self
    }

    pub fn opt_str(self, key: &str, value: Option<&str>) -> Self {
        match value {
            Some(value) => self.str(key, value),
            None => self,
        }
    }

    pub fn u64(mut self, key: &str, value: u64) -> Self {
        let text = self.key(key);
        let _ = write!(text, "{value}");
        self
    }

    /// A value the mapper holds as a tree.
    pub fn value(mut self, key: &str, value: &Value) -> Self {
        crate::json::append(self.key(key), value);
        self
    }

    pub fn opt_value(self, key: &str, value: Option<&Value>) -> Self {
        match value {
            Some(value) => self.value(key, value),
            None => self,
        }
    }

    /// An array of values the mapper holds as trees.
    pub fn values(mut self, key: &str, values: &[Value]) -> Self {
        let text = self.key(key);
        text.push('[');
        for (index, value) in values.iter().enumerate() {
            if index > 0 {
                text.push(',');
            }
            crate::json::append(text, value);
        }
        text.push(']');
        self
    }

    /// A nested object, its fields written in place by `write` (no second string: a tool
    /// call inside a permission request can be megabytes).
    pub fn object(mut self, key: &str, write: impl FnOnce(Obj) -> Obj) -> Self {
        self.key(key).push('{');
        let nested = write(Obj { text: std::mem::take(&mut self.text), empty: true });
        self.text = nested.end();
        self
    }

    /// JSON text written by another builder (an object or array), inserted as it is.
    pub fn raw(mut self, key: &str, json: &str) -> Self {
        self.key(key).push_str(json);
        self
    }

    /// An array of JSON texts written by other builders.
    pub fn raw_list<'a>(mut self, key: &str, items: impl IntoIterator<Item = &'a str>) -> Self {
        let text = self.key(key);
        text.push('[');
        for (index, item) in items.into_iter().enumerate() {
            if index > 0 {
                text.push(',');
            }
            text.push_str(item);
        }
        text.push(']');
        self
    }

    pub fn end(mut self) -> String {
        self.text.push('}');
        self.text
    }
}

/// Appends `value` as a JSON string, escaped as `serde_json` escapes it: `"` and `\`, and the
/// control characters below U+0020 (`\b \t \n \f \r` by name, the others as `\u00XX`). The
/// runs between them are found eight bytes at a time and copied whole, since a streamed
/// delta's text is written here and rarely holds one (issue 27).
pub(crate) fn string(out: &mut String, value: &str) {
    out.reserve(value.len() + 2);
    out.push('"');
    let mut rest = value;
    loop {
        // Every byte `plain_len` stops at is ASCII, so both slices fall on characters.
        let plain = plain_len(rest.as_bytes());
        out.push_str(&rest[..plain]);
        let Some(&byte) = rest.as_bytes().get(plain) else { break };
        match byte {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            _ => {
                let _ = write!(out, "\\u{byte:04x}");
            }
        }
        rest = &rest[plain + 1..];
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn escapes_strings_as_serde_json_does() {
        let samples = [
            "",
            "plain",
            "a \"quoted\" \\ back",
            "line\nbreak\r\ttab",
            "\u{0}\u{1}\u{7}\u{8}\u{b}\u{c}\u{1f}\u{7f}",
            "ünïcødé 😀 / </script>",
            "\u{2028}\u{2029}",
        ];
        for sample in samples {
            let mut mine = String::new();
            string(&mut mine, sample);
            assert_eq!(mine, serde_json::to_string(sample).unwrap(), "{sample:?}");
        }
        let all: String = (0u8..0x80).map(char::from).collect();
        let mut mine = String::new();
        string(&mut mine, &all);
        assert_eq!(mine, serde_json::to_string(&all).unwrap());
    }

    /// An escape is found wherever it falls against the eight-byte words the runs are read in,
    /// and next to wide characters.
    #[test]
    fn escapes_wherever_the_words_fall() {
        for len in 0..20 {
            for at in 0..=len {
                for special in ["\"", "\\", "\n", "\u{1}", "\u{1f}", "\u{7f}", "é", "\t\"€"] {
                    let mut sample = "a".repeat(len);
                    sample.insert_str(at, special);
                    let mut mine = String::new();
                    string(&mut mine, &sample);
                    assert_eq!(mine, serde_json::to_string(&sample).unwrap(), "{sample:?}");
                }
            }
        }
    }

    #[test]
    fn writes_objects_field_by_field() {
        let text = Obj::new()
            .str("a", "x")
            .opt_str("skipped", None)
            .u64("n", 7)
            .value("v", &json!({"k": [1, null]}))
            .values("list", &[json!(1), json!("two")])
            .raw("r", "{}")
            .raw_list("rl", ["[]", "3"])
            .end();
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            value,
            json!({"a": "x", "n": 7, "v": {"k": [1, null]}, "list": [1, "two"], "r": {}, "rl": [[], 3]})
        );
        assert_eq!(Obj::new().end(), "{}");
    }

    #[test]
    fn writes_nested_objects_in_place() {
        let text = Obj::new()
            .str("a", "x")
            .object("inner", |o| o.u64("n", 1).object("deeper", |o| o))
            .str("b", "y")
            .end();
        assert_eq!(text, r#"{"a":"x","inner":{"n":1,"deeper":{}},"b":"y"}"#);
    }
}
