//! Members of a JSON object found by comparing names, not hashing them.
//!
//! serde_json's maps (an `IndexMap` here, for `preserve_order`) hash the name with SipHash at
//! every look-up. The row and the message part a turn streams into have a handful of members
//! and are looked up at every delta: hashing was about 7 % of the Desktop simulator's CPU per
//! delta (docs/performance.md, issue 27). A few string comparisons cost less.

use serde_json::Value;

/// `value[name]`, if `value` is an object that has it.
pub fn member<'a>(value: &'a Value, name: &str) -> Option<&'a Value> {
    value.as_object()?.iter().find_map(|(key, member)| (key == name).then_some(member))
}

/// [`member`], to change in place.
pub fn member_mut<'a>(value: &'a mut Value, name: &str) -> Option<&'a mut Value> {
    value.as_object_mut()?.iter_mut().find_map(|(key, member)| (key == name).then_some(member))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn finds_what_indexing_finds() {
        let mut row = json!({"rowId": 7, "text": "a", "outer": {"inner": 1}});
        for name in ["rowId", "text", "outer", "missing", ""] {
            assert_eq!(member(&row, name), row.get(name), "{name}");
        }
        if let Some(Value::String(text)) = member_mut(&mut row, "text") {
            text.push('b');
        }
        assert_eq!(row["text"], "ab");
        assert_eq!(member(&json!([1]), "0"), None);
        assert_eq!(member_mut(&mut json!("text"), "text"), None);
    }
}
