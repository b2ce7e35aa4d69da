//! The `-32700` answers to lines that are not JSON, written by the transport itself.
//!
//! The SDK answers such a line with the whole line in `data.line`: a 200 KB garbage line came
//! back as a 200 KB error (and a line of any size with anything the client typed in it). Here
//! the error echoes at most [`ECHO_LIMIT`] bytes of it, and says whether it was cut and how
//! long the line was: enough to find the culprit, bounded whatever arrives.

use serde::de::IgnoredAny;
use serde_json::{Value, json};

/// The most of an offending line a parse error echoes.
pub const ECHO_LIMIT: usize = 1024;

/// The `-32700` answer for `line` when it is not JSON text, or `None` when it is (the SDK then
/// handles it: a request, a response, or an invalid request it answers `-32600`).
pub fn parse_error_reply(line: &str) -> Option<String> {
    // The same parser the SDK uses, without building the tree.
    serde_json::from_str::<IgnoredAny>(line).err()?;
    Some(reply(Value::Null, error_data(line, None)))
}

/// The `-32700` answer for a line that is not UTF-8 (given as its lossy decoding): under the
/// request's id when it can still be read (so that request is answered exactly once, and
/// never run with altered text), else under `null`.
pub fn not_utf8_reply(lossy: &str) -> String {
    let data = error_data(lossy, Some("the line is not valid UTF-8"));
    let id = serde_json::from_str::<Value>(lossy).ok().and_then(|frame| {
        frame.get("method")?;
        frame.get("id").filter(|id| id.is_string() || id.is_u64() || id.is_i64()).cloned()
    });
    reply(id.unwrap_or(Value::Null), data)
}

/// The answer to a line of `bytes` bytes, over `limit`, of which `start` was kept: invalid
/// params naming the limit, under the request's id when the start of the line shows it (a
/// request's `id` usually comes first), else under `null`.
pub fn too_long_reply(start: &[u8], bytes: usize, limit: usize) -> String {
    let head = String::from_utf8_lossy(&start[..start.len().min(ECHO_LIMIT)]);
    let id = id_near_start(&head).unwrap_or(Value::Null);
    let message = format!(
        "The message is too large: {bytes} bytes (the limit is {} MiB per line)",
        limit / (1024 * 1024)
    );
    let data = json!({"line": prefix(&head, ECHO_LIMIT), "truncated": true, "lineBytes": bytes});
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": message, "data": data}})
        .to_string()
}

/// `"id": <number or string>` in the first bytes of a request line.
fn id_near_start(head: &str) -> Option<Value> {
    let at = head.find("\"id\"")? + 4;
    let rest = head[at..].trim_start().strip_prefix(':')?.trim_start();
    if let Some(quoted) = rest.strip_prefix('"') {
        let end = quoted.find('"')?;
        return Some(Value::String(quoted[..end].to_string()));
    }
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse::<u64>().ok().map(Value::from)
}

fn error_data(line: &str, reason: Option<&str>) -> Value {
    let prefix = prefix(line, ECHO_LIMIT);
    let mut data = json!({
        "line": prefix,
        "truncated": prefix.len() < line.len(),
        "lineBytes": line.len(),
    });
    if let Some(reason) = reason {
        data["reason"] = json!(reason);
    }
    data
}

fn reply(id: Value, data: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32700, "message": "Parse error", "data": data}})
        .to_string()
}

/// The longest prefix of `text` of at most `limit` bytes that ends on a character boundary.
fn prefix(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(reply: &str) -> Value {
        serde_json::from_str(reply).unwrap()
    }

    #[test]
    fn a_huge_garbage_line_is_echoed_as_a_bounded_prefix() {
        let line = "é garbage ".repeat(20_000);
        let reply = parsed(&parse_error_reply(&line).unwrap());
        assert_eq!(reply["id"], Value::Null);
        assert_eq!(reply["error"]["code"], -32700);
        let data = &reply["error"]["data"];
        let echoed = data["line"].as_str().unwrap();
        assert!(echoed.len() <= ECHO_LIMIT && echoed.len() > ECHO_LIMIT - 4, "{}", echoed.len());
        assert!(line.starts_with(echoed));
        assert_eq!(data["truncated"], true);
        assert_eq!(data["lineBytes"], line.len());
        assert!(reply.to_string().len() < 2 * ECHO_LIMIT);
    }

    #[test]
    fn a_short_line_is_echoed_whole_and_json_text_is_left_to_the_sdk() {
        let reply = parsed(&parse_error_reply("not json").unwrap());
        assert_eq!(
            reply["error"]["data"],
            json!({"line": "not json", "truncated": false, "lineBytes": 8})
        );
        for json_text in [r#"{"jsonrpc":"2.0","id":1,"method":"m"}"#, "[1,2]", "7", r#"{"a":1}"#] {
            assert_eq!(parse_error_reply(json_text), None, "{json_text}");
        }
    }

    #[test]
    fn a_line_that_is_not_utf8_is_answered_under_its_id_when_readable() {
        let reply =
            parsed(&not_utf8_reply("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"\u{FFFD}\"}"));
        assert_eq!((&reply["id"], &reply["error"]["code"]), (&json!(7), &json!(-32700)));
        assert_eq!(reply["error"]["data"]["reason"], "the line is not valid UTF-8");
        let reply = parsed(&not_utf8_reply("\u{FFFD}("));
        assert_eq!(reply["id"], Value::Null);
    }
}
