//! Redaction of recorded inputs.
//!
//! Streamed text (`text`, `delta`, `append`, …) is masked character by character, so its
//! pieces still join into the whole ([`STREAMED_TEXT_KEYS`]). Other free text is replaced by
//! numbered placeholders (`redacted-7`). The same text always gets the
//! same placeholder within one recording, so equality survives (a tool-call id, a workspace path
//! repeated across calls) while the text does not. Paths are replaced component by component,
//! so `/home/me/proj/src/a.rs` stays below `/home/me/proj` after redaction — mappers join and
//! compare paths. Only values that steer a mapper and carry no user data are kept: JSON keys
//! that look like identifiers, numbers, booleans, and short single-token strings in a
//! structural role: under the keys listed in [`KEPT_VALUE_KEYS`], named like an id (`…Id`) or
//! named for a structural role by their last word ([`STRUCTURAL_SUFFIXES`]: `deliveryKind`,
//! `stopState`, `followupMode`, `logEpoch`, …). A protocol's enum values, epochs and
//! subscription topics are what a mapper matches on; redacting them changes its decisions
//! (a frame taken for another conversation's, a turn reported broken).
//!
//! What stays visible is listed in `docs/recording.md`.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Map, Value};
use zcode_contract::NativeData;

/// Keys whose string values are structural (enums, names of methods and kinds, model refs) and
/// kept when they are a short single token. Everything else is redacted.
const KEPT_VALUE_KEYS: &[&str] = &[
    "action",
    "arch",
    "category",
    "const",
    "currency",
    "compression",
    "cursor",
    "current",
    "currentValue",
    "decision",
    "delivery",
    "encoding",
    "enum",
    "format",
    "interaction",
    "jsonrpc",
    "kind",
    "level",
    "method",
    "mime",
    "mimeType",
    "mode",
    "model",
    "nextCursor",
    "op",
    "origin",
    "outcome",
    "phase",
    "platform",
    "priority",
    "protocolName",
    "provider",
    "reason",
    "reasonCode",
    "resultType",
    "risk",
    "riskLevel",
    "role",
    "scope",
    "service",
    "sessionUpdate",
    "source",
    "state",
    "status",
    "stopReason",
    "thoughtLevel",
    "toolName",
    "topic",
    "type",
    "value",
    "variant",
    "version",
];

/// The last word of a key that names a structural role: `deliveryKind`, `session_kind`,
/// `stopState`, `followupMode`, `titleSource`, `logEpoch`, `inputFormat`, `reasoningLevel`,
/// `thoughtLevels`, `deliveryProfile`. Matched case-sensitively after a lower-case letter (a
/// camelCase word) or after `_`/`-` (lower case), so `mode` itself is not a suffix match and
/// `episode` does not end in `Mode`.
const STRUCTURAL_SUFFIXES: &[&str] = &[
    "Kind", "Type", "Mode", "State", "Status", "Phase", "Source", "Profile", "Epoch", "Format",
    "Level", "Levels",
];

/// Keys of text a protocol streams in pieces and later sends whole (message and reasoning
/// deltas, a row's text): a mapper checks that the pieces join into the whole, so their
/// redaction must commute with joining. Such text is masked character by character
/// ([`mask`]) instead of replaced by a placeholder: the pieces of a masked stream join into
/// the masked whole, and a masked prefix is still a prefix.
const STREAMED_TEXT_KEYS: &[&str] =
    &["text", "delta", "append", "content", "thinking", "reasoning"];

/// Longest string kept under a kept key; longer ones are content, not a token.
const MAX_KEPT_LEN: usize = 128;

/// Keys whose values are binary data as base64 (attachments, embedded blobs).
const BASE64_KEYS: &[&str] = &["data", "blob"];

/// Base64 at least this long is treated as binary data under any key.
const MIN_BASE64_LEN: usize = 64;

/// Replaces free text by consistent placeholders for one recording.
pub struct Redactor {
    /// Keyed per recording, so placeholders cannot be correlated across recordings and the
    /// table holds hashes, not the secrets themselves.
    hasher: RandomState,
    placeholders: HashMap<u64, u64>,
    /// Hashes of the values kept under structural (non-id) keys so far, and of the
    /// identifier keys seen. The same token
    /// elsewhere (an option the user picked, echoed in an answer) is kept too, so the mapper
    /// still recognises it.
    vocabulary: HashSet<u64>,
}

impl Default for Redactor {
    fn default() -> Self {
        Self::new()
    }
}

impl Redactor {
    pub fn new() -> Self {
        Self {
            hasher: RandomState::new(),
            placeholders: HashMap::new(),
            vocabulary: HashSet::new(),
        }
    }

    /// A free-text string: empty stays empty, a path is redacted per component, anything
    /// else becomes one placeholder.
    pub fn text(&mut self, text: &str) -> String {
        if text.is_empty() {
            return String::new();
        }
        if is_path_like(text) {
            return self.path(text);
        }
        self.placeholder(text)
    }

    /// JSON text (an operation's parameters, a native reply): the redacted JSON, compact with
    /// keys sorted (so the recording can show it as JSON). JSON values one a line (a mapper's
    /// connection may hand its session several events as one) are redacted line by line. Other
    /// text is redacted whole.
    pub fn json_text(&mut self, text: &str) -> String {
        let values: Option<Vec<Value>> = match serde_json::from_str(text) {
            Ok(value) => Some(vec![value]),
            Err(_) if text.contains('\n') => {
                text.split('\n').map(|line| serde_json::from_str(line).ok()).collect()
            }
            Err(_) => None,
        };
        let Some(values) = values else { return self.text(text) };
        let redacted: Vec<String> =
            values.iter().map(|value| sorted(&self.json(value)).to_string()).collect();
        redacted.join("\n")
    }

    /// Native data: text as JSON text; bytes cannot be redacted by structure, so they become
    /// a placeholder (a mapper that decodes them rejects it, and the line is marked).
    pub fn native_data(&mut self, data: &NativeData) -> NativeData {
        match data {
            NativeData::Text(text) => NativeData::Text(self.json_text(text)),
            NativeData::Binary(bytes) => {
                NativeData::Binary(self.placeholder(&BASE64.encode(bytes)).into_bytes())
            }
        }
    }

    /// A JSON value with every string redacted except kept structural values.
    pub fn json(&mut self, value: &Value) -> Value {
        self.value(value, Place { key: None, secret: false })
    }

    fn value(&mut self, value: &Value, place: Place<'_>) -> Value {
        match value {
            Value::String(text) => Value::String(self.string_at(text, place)),
            Value::Array(items) => {
                Value::Array(items.iter().map(|item| self.value(item, place)).collect())
            }
            Value::Object(map) => {
                // `{name, value}` pairs are how environments and headers are passed around.
                let pair = map.contains_key("name") && map.contains_key("value");
                let mut redacted = Map::new();
                for (name, item) in map {
                    let secret = place.secret || is_secret_key(name) || (pair && name == "value");
                    let value = self.value(item, Place { key: Some(name), secret });
                    let name = if is_identifier(name) {
                        // A field's name is structure: a value naming it (the field a delta
                        // patches) is kept too.
                        if !secret {
                            self.vocabulary.insert(self.hasher.hash_one(name.as_str()));
                        }
                        name.clone()
                    } else {
                        self.text(name)
                    };
                    redacted.insert(name, value);
                }
                Value::Object(redacted)
            }
            Value::Number(_) | Value::Bool(_) | Value::Null => value.clone(),
        }
    }

    fn string_at(&mut self, text: &str, place: Place<'_>) -> String {
        let key = place.key;
        let streamed = key.is_some_and(|key| STREAMED_TEXT_KEYS.contains(&key));
        // An absolute path or URL is never a structural token, whatever its key: paths under
        // the home name the user. Streamed text is content even when it is one word.
        if is_token(text) && !place.secret && !streamed && !is_absolute_path_or_url(text) {
            let hash = self.hasher.hash_one(text);
            if let Some(key) = key.filter(|key| keeps_value(key)) {
                // Enum-like values only: ids are unique per event and would grow the table
                // with every event of a long turn.
                if !is_id_key(key) {
                    self.vocabulary.insert(hash);
                }
                return text.to_string();
            }
            if self.vocabulary.contains(&hash) {
                return text.to_string();
            }
        }
        // JSON carried as text (streamed tool input, serialized arguments): redact inside, so
        // the structure a mapper may parse stays intact.
        if text.starts_with(['{', '['])
            && let Ok(inner @ (Value::Object(_) | Value::Array(_))) =
                serde_json::from_str::<Value>(text)
        {
            let inner = self.value(&inner, Place { key: None, secret: place.secret });
            return inner.to_string();
        }
        // Binary data stays valid base64 (mappers decode attachments).
        if is_base64(text)
            && (key.is_some_and(|k| BASE64_KEYS.contains(&k)) || text.len() >= MIN_BASE64_LEN)
        {
            return BASE64.encode(self.placeholder(text).as_bytes());
        }
        if streamed {
            return mask(text);
        }
        self.text(text)
    }

    fn path(&mut self, path: &str) -> String {
        let mut out = String::with_capacity(path.len());
        let mut component = String::new();
        for ch in path.chars() {
            if ch == '/' || ch == '\\' {
                out.push_str(&self.path_component(&component));
                out.push(ch);
                component.clear();
            } else {
                component.push(ch);
            }
        }
        out.push_str(&self.path_component(&component));
        out
    }

    fn path_component(&mut self, component: &str) -> String {
        if matches!(component, "" | "." | ".." | "~") || is_scheme_or_drive(component) {
            component.to_string()
        } else {
            self.placeholder(component)
        }
    }

    fn placeholder(&mut self, text: &str) -> String {
        let next = self.placeholders.len() as u64 + 1;
        let number = *self.placeholders.entry(self.hasher.hash_one(text)).or_insert(next);
        format!("redacted-{number}")
    }
}

/// Where a JSON value sits: under which key, and whether inside credentials.
#[derive(Clone, Copy)]
struct Place<'a> {
    key: Option<&'a str>,
    /// Inside an environment, headers or anything named like a credential: nothing is kept.
    secret: bool,
}

/// Splits a byte stream into lines and redacts each complete one as JSON (the framing every
/// current mapper uses: one JSON value per line). The unterminated tail waits for the next push.
#[derive(Default)]
pub struct LineRedactor {
    partial: Vec<u8>,
}

impl LineRedactor {
    /// The complete lines of the stream so far, redacted; may be empty.
    pub fn push(&mut self, redactor: &mut Redactor, bytes: &[u8]) -> Vec<u8> {
        let Some(last_newline) = bytes.iter().rposition(|&b| b == b'\n') else {
            self.partial.extend_from_slice(bytes);
            return Vec::new();
        };
        self.partial.extend_from_slice(&bytes[..=last_newline]);
        let complete = std::mem::replace(&mut self.partial, bytes[last_newline + 1..].to_vec());
        let mut out = Vec::with_capacity(complete.len());
        for line in complete.split_inclusive(|&b| b == b'\n') {
            let body = line.strip_suffix(b"\n").unwrap_or(line);
            out.extend(redact_line(redactor, body));
            out.push(b'\n');
        }
        out
    }

    /// The unterminated tail at the end of the stream, redacted (empty if there is none).
    pub fn finish(&mut self, redactor: &mut Redactor) -> Vec<u8> {
        let tail = std::mem::take(&mut self.partial);
        if tail.is_empty() { tail } else { redact_line(redactor, &tail) }
    }
}

/// One line without its `\n`: JSON is redacted and re-serialized (a trailing `\r` is kept),
/// blank lines stay, anything else becomes a placeholder that is still not JSON (and still not
/// UTF-8 when the original was not), so a mapper rejects it the same way.
fn redact_line(redactor: &mut Redactor, line: &[u8]) -> Vec<u8> {
    let (body, cr) = match line.strip_suffix(b"\r") {
        Some(body) => (body, &b"\r"[..]),
        None => (line, &b""[..]),
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return line.to_vec();
    }
    let mut out = match serde_json::from_slice::<Value>(body) {
        Ok(value) => redactor.json(&value).to_string().into_bytes(),
        Err(_) => match std::str::from_utf8(body) {
            Ok(text) => redactor.placeholder(text).into_bytes(),
            Err(_) => {
                let mut bytes = redactor.placeholder(&String::from_utf8_lossy(body)).into_bytes();
                bytes.push(0xff);
                bytes
            }
        },
    };
    out.extend_from_slice(cr);
    out
}

/// Every character becomes `x`: only the length in characters survives, and masking commutes
/// with joining, splitting and truncating at character boundaries.
fn mask(text: &str) -> String {
    "x".repeat(text.chars().count())
}

/// Keys sorted at every level.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&map[k]))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Keys whose whole value is credentials, whatever the keys inside say.
fn is_secret_key(key: &str) -> bool {
    const PARTS: &[&str] = &[
        "auth",
        "token",
        "secret",
        "password",
        "passwd",
        "credential",
        "cookie",
        "header",
        "apikey",
        "api_key",
        "api-key",
        "accesskey",
        "access_key",
        "private",
    ];
    let key = key.to_ascii_lowercase();
    key == "env" || PARTS.iter().any(|part| key.contains(part))
}

fn keeps_value(key: &str) -> bool {
    KEPT_VALUE_KEYS.contains(&key) || is_id_key(key) || is_structural_key(key)
}

/// `deliveryKind`, `stop_state`, `logEpoch`: a key whose last word names a structural role.
fn is_structural_key(key: &str) -> bool {
    STRUCTURAL_SUFFIXES.iter().any(|suffix| {
        let camel = key.strip_suffix(suffix).is_some_and(|head| {
            head.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        });
        // `_kind`, `-mode`: the word in lower case (no allocation: this runs for every string).
        let at = key.len().saturating_sub(suffix.len());
        let snake = at > 1 && key.is_char_boundary(at) && {
            let (head, word) = key.split_at(at);
            word.eq_ignore_ascii_case(suffix)
                && word.starts_with(|c: char| c.is_ascii_lowercase())
                && head.len() > 1
                && head.ends_with(['_', '-'])
        };
        camel || snake
    })
}

/// `id`, `sessionId`, `tool_call_id`, `requestIds`, ...
fn is_id_key(key: &str) -> bool {
    key == "id" || ["Id", "_id", "Ids", "_ids"].iter().any(|suffix| key.ends_with(suffix))
}

/// A short string without whitespace or control characters.
fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= MAX_KEPT_LEN
        && !text.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// A JSON key that names a field rather than carrying content (`file_path`, `$schema`,
/// `API_KEY`); keys with spaces, dots or slashes (questions, file names) are redacted.
fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    key.len() <= 64
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '-'))
}

fn is_base64(text: &str) -> bool {
    let data = text.trim_end_matches('=');
    text.len().is_multiple_of(4)
        && text.len() - data.len() <= 2
        && !data.is_empty()
        && data.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

/// Absolute or relative paths and URLs: one token with a separator in it.
fn is_path_like(text: &str) -> bool {
    text.contains(['/', '\\']) && !text.chars().any(char::is_whitespace)
}

/// `/home/me`, `~/x`, `C:\\x`, `file:///x`, `https://h/x`.
fn is_absolute_path_or_url(text: &str) -> bool {
    let drive = text
        .as_bytes()
        .get(1..3)
        .is_some_and(|rest| rest[0] == b':' && matches!(rest[1], b'/' | b'\\'));
    text.starts_with(['/', '\\', '~']) || drive || text.contains("://")
}

/// `file:`, `https:`, `C:`: kept so a redacted path or URL keeps its form.
fn is_scheme_or_drive(component: &str) -> bool {
    let Some(name) = component.strip_suffix(':') else { return false };
    let mut chars = name.chars();
    name.len() <= 16
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_same_text_gets_the_same_placeholder() {
        let mut r = Redactor::new();
        let a = r.text("my secret prompt");
        let b = r.text("another secret");
        assert_eq!(a, "redacted-1");
        assert_eq!(b, "redacted-2");
        assert_eq!(r.text("my secret prompt"), a);
        assert_eq!(r.text(""), "");
    }

    #[test]
    fn paths_are_redacted_per_component() {
        let mut r = Redactor::new();
        let workspace = r.text("/home/alice/project");
        let file = r.text("/home/alice/project/src/main.rs");
        assert_eq!(workspace, "/redacted-1/redacted-2/redacted-3");
        assert!(file.starts_with(&format!("{workspace}/")), "{file}");
        assert!(!file.contains("main") && !file.contains("alice"), "{file}");
        assert_eq!(r.text("file:///home/alice"), "file:///redacted-1/redacted-2");
        // (`project`, `src` and `main.rs` took 3 to 5.)
        assert_eq!(r.text(r"C:\Users\alice\..\x"), r"C:\redacted-6\redacted-2\..\redacted-7");
        // Prose with a slash is one placeholder.
        assert_eq!(r.text("read and/or write"), "redacted-8");
    }

    #[test]
    fn structure_is_kept_and_content_is_not() {
        let mut r = Redactor::new();
        let event = json!({
            "type": "stream.event",
            "event": {
                "sessionId": "ses-1", "seq": 7, "type": "message.delta", "final": true,
                "payload": {"kind": "text_delta", "delta": "SECRET", "assistantMessageId": "m-1"},
                "tool": {"toolName": "Bash", "input": {"command": "cat ~/.ssh/id_rsa"}},
                "kind": "not a token because it has spaces",
                "Which file should I read?": "x"
            }
        });
        let redacted = r.json(&event);
        let text = redacted.to_string();
        for kept in ["stream.event", "ses-1", "message.delta", "text_delta", "m-1", "Bash"] {
            assert!(text.contains(kept), "{kept} missing in {text}");
        }
        for gone in ["SECRET", "id_rsa", "not a token", "Which file"] {
            assert!(!text.contains(gone), "{gone} leaked in {text}");
        }
        assert_eq!(redacted["event"]["seq"], 7);
        assert_eq!(redacted["event"]["final"], true);
    }

    #[test]
    fn json_inside_strings_stays_json() {
        let mut r = Redactor::new();
        let delta = json!({"delta": "{\"file_path\": \"/a/b\", \"content\": \"SECRET\"}"});
        let redacted = r.json(&delta);
        let inner: Value = serde_json::from_str(redacted["delta"].as_str().unwrap()).unwrap();
        // Placeholder numbers follow key order, which depends on serde_json's `preserve_order`
        // (on whenever the ACP SDK is in the build), so check the shape, not the numbers.
        let keys: Vec<&String> = inner.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 2);
        assert_eq!(inner["content"], "xxxxxx", "streamed text is masked");
        let path = inner["file_path"].as_str().unwrap();
        assert_eq!(
            path.split('/').filter(|part| part.starts_with("redacted-")).count(),
            2,
            "{path}"
        );
        assert!(!redacted.to_string().contains("SECRET"));
    }

    #[test]
    fn enum_values_epochs_and_topics_keep_their_role() {
        let mut r = Redactor::new();
        let frame = json!({
            "deliveryKind": "online", "logEpoch": "epoch-16348ed1", "topic": "conversation/s-1",
            "payload": {"deltas": [{"op": "row.delta", "path": "text", "append": "SECRET"}]},
            "control": {"phase": "running", "stopState": "idle", "stopTargetKind": "assistant"},
            "config": {"followupMode": "queue", "session_kind": "interactive"},
            "meta": {"title": "SECRET", "titleSource": "first_input"},
            "row": {"state": "streaming", "origin": "userInput", "executionKind": "agent"},
            "episode": "SECRET", "node": "SECRET"
        });
        let redacted = r.json(&frame);
        let text = redacted.to_string();
        for kept in [
            "\"online\"",
            "epoch-16348ed1",
            "conversation/s-1",
            "row.delta",
            "\"running\"",
            "\"idle\"",
            "\"assistant\"",
            "\"queue\"",
            "interactive",
            "first_input",
            "streaming",
            "userInput",
            "\"agent\"",
        ] {
            assert!(text.contains(kept), "{kept} missing in {text}");
        }
        assert!(!text.contains("SECRET"), "{text}");
        // A structural key never keeps an absolute path or a URL.
        let paths = r.json(&json!({"topic": "/home/alice/x", "sourceId": "https://h/alice"}));
        assert!(!paths.to_string().contains("alice"), "{paths}");
        assert!(paths["topic"].as_str().unwrap().starts_with("/redacted-"), "{paths}");
    }

    #[test]
    fn a_role_is_the_last_word_of_a_key() {
        for key in ["deliveryKind", "stop_state", "x-mode", "logEpoch", "thoughtLevels", "v2Type"] {
            assert!(is_structural_key(key), "{key}");
        }
        for key in [
            "episode",
            "Kind",
            "kind_",
            "_kind",
            "mykind",
            "userName",
            "titles",
            "node",
            "Welche Größe?",
        ] {
            assert!(!is_structural_key(key), "{key}");
        }
    }

    #[test]
    fn streamed_pieces_join_into_the_redacted_whole() {
        let mut r = Redactor::new();
        let pieces: Vec<Value> =
            ["Hel", "lo wö", "rld"].iter().map(|p| r.json(&json!({"append": p}))).collect();
        let joined: String = pieces.iter().map(|p| p["append"].as_str().unwrap()).collect();
        let whole = r.json(&json!({"row": {"text": "Hello wörld"}}));
        assert_eq!(whole["row"]["text"], joined);
        assert_eq!(joined, "xxxxxxxxxxx");
    }

    #[test]
    fn offered_tokens_are_recognised_when_they_come_back() {
        let mut r = Redactor::new();
        let offered = r.json(&json!({"options": [{"value": "fast", "label": "Go fast"}]}));
        assert_eq!(offered["options"][0]["value"], "fast");
        let answer = r.json(&json!({"answer_0": "fast", "answer_1": "my own words"}));
        assert_eq!(answer, json!({"answer_0": "fast", "answer_1": "redacted-2"}));
    }

    #[test]
    fn binary_data_stays_base64() {
        let mut r = Redactor::new();
        let image = r.json(&json!({"type": "image", "data": "aGVsbG8gd29ybGQ="}));
        assert_eq!(image["data"], "cmVkYWN0ZWQtMQ==", "base64 of redacted-1");
        assert_eq!(r.json(&json!({"data": "not base64!"}))["data"], "redacted-2");
    }

    #[test]
    fn credentials_are_redacted_whatever_their_form() {
        let mut r = Redactor::new();
        let create = json!({
            "cwd": "/w",
            "mcpServers": [{"type": "http", "name": "srv", "url": "https://h.example/mcp?k=SECRET",
                "headers": [{"name": "Authorization", "value": "Bearer SECRET"}],
                "env": {"API_KEY": "SECRET"}}]
        });
        let text = r.json(&create).to_string();
        assert!(!text.contains("SECRET"), "{text}");
        assert!(text.contains("API_KEY") && text.contains("\"http\""), "{text}");
        // Token-like secrets too, although `value` and ids are kept elsewhere.
        let tokens = json!({
            "env": [{"name": "API_TOKEN", "value": "tok3n"}],
            "settings": {"apiKey": {"id": "k3y", "type": "b3arer"}},
            "vars": [{"name": "X", "value": "v4lue"}]
        });
        let text = r.json(&tokens).to_string();
        for secret in ["tok3n", "k3y", "b3arer", "v4lue"] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
        assert!(text.starts_with(r#"{"env":[{"name":"redacted-"#), "{text}");
    }

    #[test]
    fn json_lines_are_redacted_line_by_line() {
        let mut r = Redactor::new();
        let text = "{\"b\":\"SECRET\",\"a\":1}\n{\"delta\":\"hi\"}";
        assert_eq!(r.json_text(text), "{\"a\":1,\"b\":\"redacted-1\"}\n{\"delta\":\"xx\"}");
        // One line that is not JSON: the whole text is one placeholder.
        assert_eq!(r.json_text("{\"a\":1}\nSECRET"), "redacted-2");
    }

    #[test]
    fn lines_are_redacted_whole_and_the_tail_waits() {
        let mut r = Redactor::new();
        let mut lines = LineRedactor::default();
        assert_eq!(lines.push(&mut r, b"{\"id\":1,\"result\":\"SEC"), b"");
        let out = lines.push(&mut r, b"RET\"}\r\n\n{\"id\":2}\nnot json\n{\"id\"");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"id\":1,\"result\":\"redacted-1\"}\r\n\n{\"id\":2}\nredacted-2\n"
        );
        assert_eq!(lines.push(&mut r, b":3}"), b"");
        assert_eq!(lines.finish(&mut r), b"{\"id\":3}");
        assert_eq!(lines.finish(&mut r), b"");
        let invalid = lines.push(&mut r, b"\xff\xfe\n");
        assert_eq!(invalid.last_chunk::<2>(), Some(&[0xff, b'\n']));
        assert!(std::str::from_utf8(&invalid).is_err());
    }
}
