//! Params and answer schemas of the methods the app-server serves, after the 3.15.1 source
//! (`packages/shared/src/zcode-protocol/index.ts`, `zcode-protocol-legacy-types.ts`,
//! `zcode-protocol-v4/transport.ts`). They are data, `schemas.zod`, read once after the V4
//! command schemas it builds on (`v4/commands.zod`). Legacy params are `.strict()`: an unknown
//! key is a `-32602`. Per-release differences come from the profile.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use super::profile::AppServerProfile;
use super::zod::{self, Schema, custom};

const SOURCE: &str = include_str!("schemas.zod");

/// The schema named `name` in `schemas.zod`: a method, or the answer a reverse request wants.
pub fn named(name: &str) -> Schema {
    definitions().get(name).cloned().unwrap_or_else(|| panic!("schemas.zod has no `{name}`"))
}

fn definitions() -> &'static HashMap<&'static str, Schema> {
    static DEFINITIONS: OnceLock<HashMap<&'static str, Schema>> = OnceLock::new();
    DEFINITIONS.get_or_init(|| {
        zod::parse(&[crate::v4::inbox::SCHEMAS, SOURCE])
            .unwrap_or_else(|error| panic!("schemas.zod: {error}"))
    })
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
        "session/create" | "session/setMode" => schema.bind("mode", profile.session_modes()),
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

/// An object schema without the fields `keys` (added by a later release).
fn omit(mut schema: Schema, keys: &[&str]) -> Schema {
    if let Schema::Object { fields, .. } = &mut schema {
        fields.retain(|field| !keys.contains(&field.name));
    }
    schema
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::app_server::by_name;
    use crate::common::zod::{check, parse};

    fn field_names(schema: &Schema) -> Vec<&'static str> {
        match schema {
            Schema::Object { fields, .. } => fields.iter().map(|field| field.name).collect(),
            other => panic!("not an object: {other:?}"),
        }
    }

    #[test]
    fn every_definition_parses_and_references_resolve() {
        // `schemas.zod` names what the V4 command schemas define, and only that.
        assert!(parse(&[SOURCE]).unwrap_err().contains("`modelSelection` is not defined"));
        let definitions = parse(&[crate::v4::inbox::SCHEMAS, SOURCE]).unwrap();
        assert_eq!(definitions.len(), 63);
        assert_eq!(field_names(&named("session/setModel"))[1], "model");
        let error = parse(&["a = strict { b: missing }"]).unwrap_err();
        assert_eq!(error, "in `a`: `missing` is not defined");
        assert!(parse(&["a = enum(\"x\""]).is_err());
        // A later text may name an earlier one's definitions.
        let alias = parse(&["a = strict { b: bool }", "c = a"]).unwrap();
        assert_eq!(field_names(&alias["c"]), ["b"]);
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
    }
}
