//! A small strict-schema validator that reports problems the way ZCode's zod 4 schemas do:
//! issue objects (`invalid_type`, `unrecognized_keys`, `too_small`, `invalid_value`,
//! `invalid_union`, `custom`), the `Invalid params — <path>: <message>` summary of
//! `parseParams` and the `{name: "ZodError", message}` error data. Schemas are data in `.zod`
//! files (`v4/commands.zod` gives the notation), read by [`parse`]; the app-server and the
//! Services Server check with the same ones.
//!
//! Only the schema features the protocol's params use are modelled. Issue texts follow zod 4's
//! default messages; they are close to, not byte-identical with, the real ones.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

/// One accepted shape.
#[derive(Debug, Clone)]
pub enum Schema {
    Unknown,
    /// Any value, but it must be there (`.nonoptional()`).
    Present,
    /// A string; `min` after optional trimming (zod `.trim().min(n)`).
    Str {
        min: usize,
        trim: bool,
    },
    /// An integer `>= min` (`nonnegative` = 0, `positive` = 1).
    Int {
        min: Option<i64>,
    },
    Number,
    Bool,
    Literal(Value),
    Enum(Vec<&'static str>),
    Array {
        item: Box<Schema>,
        min: usize,
        max: Option<usize>,
    },
    /// A string-keyed record of values.
    Record(Box<Schema>),
    Object {
        fields: Vec<Field>,
        unknown: UnknownKeys,
    },
    Nullable(Box<Schema>),
    /// The first alternative that accepts wins; none → `invalid_union`.
    Union(Vec<Schema>),
}

impl Schema {
    /// An object schema whose field `key`, if it is an `enum()` in the data, takes `values`.
    pub fn bind(mut self, key: &str, values: &[&'static str]) -> Schema {
        if let Schema::Object { fields, .. } = &mut self
            && let Some(field) = fields.iter_mut().find(|field| field.name == key)
            && matches!(&field.schema, Schema::Enum(values) if values.is_empty())
        {
            field.schema = Schema::Enum(values.to_vec());
        }
        self
    }
}

/// What an object does with keys it does not declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnknownKeys {
    /// `.strict()`: an `unrecognized_keys` issue.
    Reject,
    /// Plain `z.object`: silently dropped.
    Strip,
}

#[derive(Debug, Clone)]
pub struct Field {
    pub name: &'static str,
    pub schema: Schema,
    pub optional: bool,
}

/// One problem found, as a zod 4 issue object (`{code, ..., path, message}`).
pub type Issue = Value;

/// Validates `value` against `schema`; an empty list means it is accepted.
pub fn check(schema: &Schema, value: Option<&Value>) -> Vec<Issue> {
    let mut issues = Vec::new();
    visit(schema, value, &mut Vec::new(), &mut issues);
    issues
}

/// A `custom` issue (refinements the schemas express in code).
pub fn custom(path: &[&str], message: &str) -> Issue {
    json!({"code": "custom", "path": path, "message": message})
}

/// `Invalid params — a.b: message; c: message (+n more)`, as `parseParams` words it.
pub fn invalid_params_message(issues: &[Issue]) -> String {
    if issues.is_empty() {
        return "Invalid params".to_owned();
    }
    let part = |issue: &Issue| {
        let segments = issue["path"].as_array().map(Vec::as_slice).unwrap_or_default();
        let segments: Vec<String> = segments
            .iter()
            .map(|segment| segment.as_str().map_or(segment.to_string(), str::to_owned))
            .collect();
        let path = if segments.is_empty() { "(root)".to_owned() } else { segments.join(".") };
        format!("{path}: {}", issue["message"].as_str().unwrap_or("invalid"))
    };
    let parts: Vec<String> = issues.iter().take(5).map(part).collect();
    let more =
        if issues.len() > 5 { format!(" (+{} more)", issues.len() - 5) } else { String::new() };
    format!("Invalid params — {}{more}", parts.join("; "))
}

/// The `data` of a `-32602` error: a serialized zod 4 `ZodError`.
pub fn error_data(issues: &[Issue]) -> Value {
    let pretty = serde_json::to_string_pretty(issues).expect("issues serialize");
    json!({"name": "ZodError", "message": pretty})
}

fn kind_of(value: Option<&Value>) -> &'static str {
    match value {
        None => "undefined",
        Some(Value::Null) => "null",
        Some(Value::Bool(_)) => "boolean",
        Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Array(_)) => "array",
        Some(Value::Object(_)) => "object",
    }
}

fn invalid_type(expected: &str, value: Option<&Value>, path: &[Value]) -> Issue {
    json!({
        "expected": expected,
        "code": "invalid_type",
        "path": path,
        "message": format!("Invalid input: expected {expected}, received {}", kind_of(value)),
    })
}

/// A `too_small` (`minimum`) or `too_big` (`maximum`) issue.
fn bound(origin: &str, limit: &str, value: Value, path: &[Value], message: String) -> Issue {
    let code = if limit == "minimum" { "too_small" } else { "too_big" };
    json!({"origin": origin, "code": code, (limit): value, "inclusive": true, "path": path,
           "message": message})
}

fn visit(schema: &Schema, value: Option<&Value>, path: &mut Vec<Value>, issues: &mut Vec<Issue>) {
    match schema {
        Schema::Unknown => {}
        Schema::Present => {
            if value.is_none() {
                issues.push(invalid_type("nonoptional", value, path));
            }
        }
        Schema::Str { min, trim } => match value {
            Some(Value::String(text)) => {
                let length = if *trim { text.trim().chars().count() } else { text.chars().count() };
                if length < *min {
                    let message = format!("Too small: expected string to have >={min} characters");
                    issues.push(bound("string", "minimum", json!(min), path, message));
                }
            }
            other => issues.push(invalid_type("string", other, path)),
        },
        Schema::Int { min } => match value {
            Some(Value::Number(number)) => match number.as_i64().or_else(|| whole(number)) {
                None => issues.push(invalid_type("int", value, path)),
                Some(integer) => {
                    if let Some(min) = min
                        && integer < *min
                    {
                        let message = format!("Too small: expected number to be >={min}");
                        issues.push(bound("number", "minimum", json!(min), path, message));
                    }
                }
            },
            other => issues.push(invalid_type("number", other, path)),
        },
        Schema::Number => {
            if !matches!(value, Some(Value::Number(_))) {
                issues.push(invalid_type("number", value, path));
            }
        }
        Schema::Bool => {
            if !matches!(value, Some(Value::Bool(_))) {
                issues.push(invalid_type("boolean", value, path));
            }
        }
        Schema::Literal(expected) => {
            if value != Some(expected) {
                issues.push(json!({
                    "code": "invalid_value", "values": [expected], "path": path,
                    "message": format!("Invalid input: expected {expected}"),
                }));
            }
        }
        Schema::Enum(values) => {
            let known = value.and_then(Value::as_str).is_some_and(|text| values.contains(&text));
            if !known {
                let listed: Vec<String> =
                    values.iter().map(|value| format!("\"{value}\"")).collect();
                issues.push(json!({
                    "code": "invalid_value", "values": values, "path": path,
                    "message": format!("Invalid option: expected one of {}", listed.join("|")),
                }));
            }
        }
        Schema::Array { item, min, max } => match value {
            Some(Value::Array(items)) => {
                if items.len() < *min {
                    let message = format!("Too small: expected array to have >={min} items");
                    issues.push(bound("array", "minimum", json!(min), path, message));
                }
                if let Some(max) = max
                    && items.len() > *max
                {
                    let message = format!("Too big: expected array to have <={max} items");
                    issues.push(bound("array", "maximum", json!(max), path, message));
                }
                for (index, element) in items.iter().enumerate() {
                    path.push(json!(index));
                    visit(item, Some(element), path, issues);
                    path.pop();
                }
            }
            other => issues.push(invalid_type("array", other, path)),
        },
        Schema::Record(inner) => match value {
            Some(Value::Object(entries)) => {
                for (key, element) in entries {
                    path.push(json!(key));
                    visit(inner, Some(element), path, issues);
                    path.pop();
                }
            }
            other => issues.push(invalid_type("record", other, path)),
        },
        Schema::Object { fields, unknown } => match value {
            Some(Value::Object(entries)) => visit_object(fields, *unknown, entries, path, issues),
            other => issues.push(invalid_type("object", other, path)),
        },
        Schema::Nullable(inner) => {
            if value != Some(&Value::Null) {
                visit(inner, value, path, issues);
            }
        }
        Schema::Union(options) => {
            let mut errors = Vec::new();
            for option in options {
                let found = {
                    let mut nested = Vec::new();
                    visit(option, value, &mut path.clone(), &mut nested);
                    nested
                };
                if found.is_empty() {
                    return;
                }
                errors.push(Value::Array(found));
            }
            issues.push(json!({
                "code": "invalid_union", "errors": errors, "path": path, "message": "Invalid input",
            }));
        }
    }
}

fn visit_object(
    fields: &[Field],
    unknown: UnknownKeys,
    entries: &Map<String, Value>,
    path: &mut Vec<Value>,
    issues: &mut Vec<Issue>,
) {
    for field in fields {
        let value = entries.get(field.name);
        if value.is_none() && field.optional {
            continue;
        }
        path.push(json!(field.name));
        visit(&field.schema, value, path, issues);
        path.pop();
    }
    if unknown == UnknownKeys::Reject {
        let extra: Vec<&String> = entries
            .keys()
            .filter(|key| !fields.iter().any(|field| field.name == key.as_str()))
            .collect();
        if !extra.is_empty() {
            let quoted: Vec<String> = extra.iter().map(|key| format!("\"{key}\"")).collect();
            let noun = if extra.len() == 1 { "key" } else { "keys" };
            issues.push(json!({
                "code": "unrecognized_keys", "keys": extra, "path": path,
                "message": format!("Unrecognized {noun}: {}", quoted.join(", ")),
            }));
        }
    }
}

/// `2.0` is an integer in JavaScript.
fn whole(number: &serde_json::Number) -> Option<i64> {
    let float = number.as_f64()?;
    (float.fract() == 0.0 && float.abs() < 9.007_199_254_740_992e15).then_some(float as i64)
}

/// Reads definitions in the notation of the `.zod` files, one text after another: a later
/// text may name what an earlier one defines.
pub fn parse(sources: &[&'static str]) -> Result<HashMap<&'static str, Schema>, String> {
    let tokens = sources.iter().flat_map(|source| tokens(source)).collect();
    let mut parser = Parser { tokens, at: 0, defined: HashMap::new() };
    while parser.at < parser.tokens.len() {
        let name = parser.next()?;
        parser.expect("=")?;
        let schema = parser.schema().map_err(|error| format!("in `{name}`: {error}"))?;
        parser.defined.insert(name, schema);
    }
    Ok(parser.defined)
}

/// Words (letters, digits, `/@._`), quoted strings and single punctuation; `#` to the end of
/// a line is a comment.
fn tokens(source: &'static str) -> Vec<&'static str> {
    let mut tokens = Vec::new();
    for line in source.lines() {
        let mut rest = line.trim_start();
        while let Some(first) = rest.chars().next() {
            let length = match first {
                '#' => break,
                '"' => rest[1..].find('"').map_or(rest.len(), |end| end + 2),
                _ if first.is_alphanumeric() => rest
                    .find(|c: char| !(c.is_alphanumeric() || "/@._".contains(c)))
                    .unwrap_or(rest.len()),
                _ => first.len_utf8(),
            };
            tokens.push(&rest[..length]);
            rest = rest[length..].trim_start();
        }
    }
    tokens
}

struct Parser {
    tokens: Vec<&'static str>,
    at: usize,
    defined: HashMap<&'static str, Schema>,
}

impl Parser {
    fn next(&mut self) -> Result<&'static str, String> {
        let token = self.tokens.get(self.at).copied().ok_or("unexpected end")?;
        self.at += 1;
        Ok(token)
    }

    fn expect(&mut self, wanted: &str) -> Result<(), String> {
        match self.next()? {
            token if token == wanted => Ok(()),
            token => Err(format!("`{wanted}` expected, `{token}` found")),
        }
    }

    /// Takes the next token if it is `wanted`.
    fn eat(&mut self, wanted: &str) -> bool {
        let found = self.tokens.get(self.at) == Some(&wanted);
        self.at += usize::from(found);
        found
    }

    /// `item, item, ...` up to `close`; a trailing comma is allowed.
    fn list<T>(
        &mut self,
        close: &str,
        mut item: impl FnMut(&mut Self) -> Result<T, String>,
    ) -> Result<Vec<T>, String> {
        let mut items = Vec::new();
        while !self.eat(close) {
            items.push(item(self)?);
            if !self.eat(",") {
                self.expect(close)?;
                break;
            }
        }
        Ok(items)
    }

    fn inner(&mut self) -> Result<Box<Schema>, String> {
        self.expect("(")?;
        let schema = self.schema()?;
        self.expect(")")?;
        Ok(Box::new(schema))
    }

    fn schema(&mut self) -> Result<Schema, String> {
        let word = self.next()?;
        Ok(match word {
            "unknown" => Schema::Unknown,
            "present" => Schema::Present,
            "nonEmpty" => Schema::Str { min: 1, trim: true },
            "string" => Schema::Str { min: 0, trim: false },
            "string1" => Schema::Str { min: 1, trim: false },
            "int" => Schema::Int { min: None },
            "nonnegativeInt" => Schema::Int { min: Some(0) },
            "positiveInt" => Schema::Int { min: Some(1) },
            "number" => Schema::Number,
            "bool" => Schema::Bool,
            "strict" | "loose" => {
                self.expect("{")?;
                let fields = self.list("}", |parser| {
                    let name = parser.next()?;
                    let optional = parser.eat("?");
                    parser.expect(":")?;
                    Ok(Field { name, schema: parser.schema()?, optional })
                })?;
                let unknown =
                    if word == "strict" { UnknownKeys::Reject } else { UnknownKeys::Strip };
                Schema::Object { fields, unknown }
            }
            "enum" => {
                self.expect("(")?;
                Schema::Enum(self.list(")", |parser| Ok(parser.next()?.trim_matches('"')))?)
            }
            "literal" => {
                self.expect("(")?;
                let value =
                    serde_json::from_str(self.next()?).map_err(|error| error.to_string())?;
                self.expect(")")?;
                Schema::Literal(value)
            }
            "array" => {
                self.expect("(")?;
                let item = Box::new(self.schema()?);
                let mut bounds = Vec::new();
                while self.eat(",") {
                    bounds.push(self.next()?.parse::<usize>().map_err(|error| error.to_string())?);
                }
                self.expect(")")?;
                Schema::Array {
                    item,
                    min: bounds.first().copied().unwrap_or(0),
                    max: bounds.get(1).copied(),
                }
            }
            "record" => Schema::Record(self.inner()?),
            "nullable" => Schema::Nullable(self.inner()?),
            "union" => {
                self.expect("(")?;
                Schema::Union(self.list(")", Self::schema)?)
            }
            name => self.defined.get(name).cloned().ok_or(format!("`{name}` is not defined"))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(text: &'static str) -> Schema {
        parse(&[text]).unwrap().remove("s").unwrap()
    }

    fn session_params() -> Schema {
        schema("s = strict { sessionId: nonEmpty, limit?: positiveInt }")
    }

    #[test]
    fn accepts_valid_values_and_reports_zod_style_issues() {
        assert!(check(&session_params(), Some(&json!({"sessionId": "s"}))).is_empty());
        let issues = check(&session_params(), Some(&json!({"limit": 0, "extra": 1})));
        let codes: Vec<&str> = issues.iter().map(|issue| issue["code"].as_str().unwrap()).collect();
        assert_eq!(codes, ["invalid_type", "too_small", "unrecognized_keys"]);
        assert_eq!(issues[0]["path"], json!(["sessionId"]));
        assert_eq!(issues[2]["message"], "Unrecognized key: \"extra\"");
        let message = invalid_params_message(&issues);
        assert!(message.starts_with("Invalid params — sessionId: Invalid input: expected string"));
        assert!(message.ends_with("(root): Unrecognized key: \"extra\""), "{message}");
    }

    #[test]
    fn blank_strings_fail_min_after_trim_and_floats_are_not_integers() {
        let issues = check(&session_params(), Some(&json!({"sessionId": "  ", "limit": 1.5})));
        assert_eq!(issues[0]["code"], "too_small");
        assert_eq!(issues[1]["expected"], "int");
        assert!(
            check(&session_params(), Some(&json!({"sessionId": "x", "limit": 2.0}))).is_empty()
        );
    }

    #[test]
    fn loose_objects_strip_unknown_keys_and_unions_collect_every_alternative() {
        let loose = schema("s = loose { a: bool }");
        assert!(check(&loose, Some(&json!({"a": true, "b": 1}))).is_empty());
        let union = schema("s = union(strict { id: int }, strict { method: nonEmpty })");
        let issues = check(&union, Some(&json!({"jsonrpc": "2.0", "id": 1})));
        assert_eq!(issues.len(), 1);
        assert_eq!(issues[0]["code"], "invalid_union");
        assert_eq!(issues[0]["errors"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn error_data_is_a_serialized_zod_error() {
        let issues = vec![custom(&[], "boom")];
        let data = error_data(&issues);
        assert_eq!(data["name"], "ZodError");
        let parsed: Value = serde_json::from_str(data["message"].as_str().unwrap()).unwrap();
        assert_eq!(parsed[0]["message"], "boom");
        assert!(data["message"].as_str().unwrap().contains("\n  {"), "pretty-printed");
    }
}
