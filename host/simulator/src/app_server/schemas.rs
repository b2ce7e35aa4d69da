//! Params and answer schemas of the methods the simulator serves, after the 3.15.1 source
//! (`packages/shared/src/zcode-protocol/index.ts`, `zcode-protocol-legacy-types.ts`,
//! `zcode-protocol-v4/transport.ts`, `command.ts`). They are data, `schemas.zod`, read once;
//! its header gives the notation. Legacy params are `.strict()`: an unknown key is a `-32602`.
//! V4 command envelopes and payloads are plain `z.object`s: unknown keys are dropped.
//! Per-release differences come from the profile.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use super::profile::AppServerProfile;
use super::zod::{Field, Schema, UnknownKeys, custom};
use crate::v4::commands::COMMAND_TYPES;

const SOURCE: &str = include_str!("schemas.zod");

/// The schema named `name` in `schemas.zod`: a method, or the answer a reverse request wants.
pub fn named(name: &str) -> Schema {
    definitions().get(name).cloned().unwrap_or_else(|| panic!("schemas.zod has no `{name}`"))
}

fn definitions() -> &'static HashMap<&'static str, Schema> {
    static DEFINITIONS: OnceLock<HashMap<&'static str, Schema>> = OnceLock::new();
    DEFINITIONS.get_or_init(|| parse(SOURCE).unwrap_or_else(|error| panic!("schemas.zod: {error}")))
}

/// The params schema of a legacy method (`session/*`, `provider/*`, `workspace/*`) as the
/// profile's release has it; `None` for a method without one.
pub fn legacy_params(method: &str, profile: &AppServerProfile) -> Option<Schema> {
    let family = ["session/", "provider/", "workspace/"];
    if !family.iter().any(|prefix| method.starts_with(prefix)) {
        return None;
    }
    let schema = definitions().get(method)?.clone();
    let old = !profile.has_315_deltas();
    Some(match method {
        "session/create" | "session/setMode" => bind(schema, "mode", profile.session_modes()),
        "session/resume" if old => named("sessionResume314"),
        "session/close" if old => omit(schema, &["expectedPersistence"]),
        "session/list" => {
            let mut omitted = Vec::new();
            if old {
                omitted.push("sessionIds");
            }
            if !profile.list_accepts_include_archived() {
                omitted.push("includeArchived");
            }
            omit(schema, &omitted)
        }
        _ => schema,
    })
}

pub fn v4_command_envelope() -> Schema {
    bind(named("v4/command"), "type", &COMMAND_TYPES)
}

/// The payload schema of a command the simulator executes; any object for the others.
pub fn v4_command_payload(kind: &str, profile: &AppServerProfile) -> Schema {
    match definitions().get(format!("command/{kind}").as_str()) {
        Some(schema) if kind == "switchCollaborationMode" => {
            bind(schema.clone(), "mode", profile.collaboration_modes())
        }
        Some(schema) => schema.clone(),
        None => named("anyObject"),
    }
}

/// `session/send`'s `superRefine` rules.
pub fn session_send_refinements(params: &Value) -> Vec<Value> {
    let mut issues = Vec::new();
    let has = |key: &str| params.get(key).is_some_and(|value| !value.is_null());
    if has("automationId") && has("offPeakTaskId") {
        issues.push(custom(&[], "automationId and offPeakTaskId are mutually exclusive"));
    }
    if has("offPeakRunType") && !has("offPeakTaskId") {
        issues.push(custom(&["offPeakRunType"], "offPeakRunType requires offPeakTaskId"));
    }
    if has("modelExecution") && !has("modelSelection") {
        issues.push(custom(&["modelExecution"], "modelExecution requires modelSelection"));
    }
    issues
}

/// An object schema whose field `key` (an `enum()` in the data) takes `values`.
fn bind(mut schema: Schema, key: &str, values: &[&'static str]) -> Schema {
    if let Schema::Object { fields, .. } = &mut schema
        && let Some(field) = fields.iter_mut().find(|field| field.name == key)
    {
        field.schema = Schema::Enum(values.to_vec());
    }
    schema
}

/// An object schema without the fields `keys` (added by a later release).
fn omit(mut schema: Schema, keys: &[&str]) -> Schema {
    if let Schema::Object { fields, .. } = &mut schema {
        fields.retain(|field| !keys.contains(&field.name));
    }
    schema
}

/// Reads definitions in the notation of `schemas.zod`.
pub(super) fn parse(source: &'static str) -> Result<HashMap<&'static str, Schema>, String> {
    let mut parser = Parser { tokens: tokens(source), at: 0, defined: HashMap::new() };
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
    use serde_json::json;

    use super::*;
    use crate::app_server::by_name;
    use crate::app_server::zod::check;

    fn field_names(schema: &Schema) -> Vec<&'static str> {
        match schema {
            Schema::Object { fields, .. } => fields.iter().map(|field| field.name).collect(),
            other => panic!("not an object: {other:?}"),
        }
    }

    #[test]
    fn every_definition_parses_and_references_resolve() {
        let definitions = parse(SOURCE).unwrap();
        assert_eq!(definitions.len(), 62);
        let error = parse("a = strict { b: missing }").unwrap_err();
        assert_eq!(error, "in `a`: `missing` is not defined");
        assert!(parse("a = enum(\"x\"").is_err());
        // An alias is the schema it names.
        let alias = field_names(&named("command/sendQueuedNow"));
        assert_eq!(alias, field_names(&named("command/deleteQueueItem")));
    }

    #[test]
    fn fields_keep_their_order_and_profiles_bind_their_values() {
        let send = named("session/send");
        assert_eq!(field_names(&send)[..3], ["sessionId", "modelSelection", "modelExecution"]);
        let old = by_name("desktop-3.14.3").unwrap();
        let new = by_name("desktop-4.0.0").unwrap();
        let legacy = |method, profile| legacy_params(method, profile).unwrap();
        assert_eq!(
            field_names(&legacy("session/list", old)),
            ["workspace", "includeArchived", "limit"]
        );
        assert_eq!(field_names(&legacy("session/list", new)), ["workspace", "sessionIds", "limit"]);
        assert!(!field_names(&legacy("session/close", old)).contains(&"expectedPersistence"));
        assert!(field_names(&legacy("session/close", new)).contains(&"expectedPersistence"));
        assert_eq!(field_names(&legacy("session/resume", old)).len(), 3);
        assert_eq!(field_names(&legacy("session/stop", new)), ["sessionId"]);
        // Only the legacy families, and only methods with params, have one.
        assert!(legacy_params("sessionResume314", new).is_none());
        assert!(legacy_params("v4/command", new).is_none());
        assert!(legacy_params("runtime/capabilities", new).is_none());
        let params = json!({"sessionId": "s", "mode": "guarded"});
        assert!(check(&legacy("session/setMode", new), Some(&params)).is_empty());
        assert_eq!(
            check(&legacy("session/setMode", old), Some(&params))[0]["code"],
            "invalid_value"
        );
        let envelope = v4_command_envelope();
        let command = json!({"commandId": "c", "clientId": "k", "sessionId": null,
                             "type": "sendText", "issuedAt": 1});
        assert!(check(&envelope, Some(&command)).is_empty());
        assert!(check(&v4_command_payload("unknownKind", new), Some(&json!({"x": 1}))).is_empty());
    }
}
