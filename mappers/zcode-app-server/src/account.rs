//! The account push (`provider/updateAccountConfig`) that lets the Agent list the Coding Plan's
//! models, built from what the core may read: the install's provider table (its `revision`
//! and path), ZCode's settings (`setting.json`: family and plan selected) and, for the
//! credentials, presence verdicts only (`docs/coding-plan.md` §3).
//!
//! Our rule (ZCode's own offline rule, Z3151 `standalone-account-provider-runtime.ts`
//! `readStandaloneAccountProviderConfigSnapshot`, narrowed to keys the core can fill): an
//! individual Coding Plan is entitled when the user is signed in to that family, a readable
//! Coding Plan key is stored for that account, and ZCode's settings select that family and
//! plan. Nothing else is ever entitled; each provider that stays unlisted gets a reason.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use zcode_contract::{FactValue, Presence, fact};

/// Fact names (the contract declares them, `contract::account_facts`).
pub const TABLE_REVISION: &str = "provider-table-revision";
pub const TABLE_PATH: &str = "provider-table-path";
pub const FAMILY: &str = "setting-provider-family";
pub const SELECTIONS: &str = "setting-family-selections";
/// `<prefix><family>`: presence of `oauth:<family>:user_info`.
pub const SIGNED_IN: &str = "signed-in:";
/// `<prefix><family>`: presence of the family's individual Coding Plan key.
pub const PLAN_KEY: &str = "coding-plan-key:";

/// The families and the one plan kind zcode-acp can stand behind (Z3151
/// `packages/provider-node/test/account-model-membership.test.ts`: the 3.15.1 table's account
/// providers are `account:<family>-<plan>` for `zai` and `bigmodel`).
pub const FAMILIES: [&str; 2] = ["zai", "bigmodel"];
pub const INDIVIDUAL_PLAN: &str = "individual-coding-plan";

pub fn provider_id(family: &str) -> String {
    format!("account:{family}-{INDIVIDUAL_PLAN}")
}

/// What a session pushes before it opens, and why plan providers stay unlisted.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AccountState {
    /// `provider/updateAccountConfig` params; `None`: nothing entitled, nothing to push (the
    /// Agent starts holding no account state, which lists the same).
    pub push: Option<Value>,
    /// Entitled provider ids (their models must be listed after the push).
    pub entitled: Vec<String>,
    /// (provider id, reason) of each individual Coding Plan provider not entitled.
    pub unlisted: Vec<(String, String)>,
}

pub const REASON_NO_TABLE: &str = "the install's provider table revision could not be read";
pub const REASON_NOT_SIGNED_IN: &str = "not signed in to ZCode for this account family";
pub const REASON_NO_KEY: &str = "no Coding Plan key in ZCode's credential store (ZCode 3.15.1 and later sign in without storing one; their requests need a token ZCode mints online, which zcode-acp does not do)";
pub const REASON_NO_FAMILY: &str =
    "ZCode's settings select no account family yet: open ZCode Desktop once";
pub const REASON_OTHER_PLAN: &str = "ZCode's settings select another plan or family (team plans and the Start Plan need live checks only ZCode Desktop makes)";
pub const REASON_IGNORED: &str = "the Agent ignored the account push (its provider table revision format is not the one this mapper knows)";

fn unreadable_reason(what: &str, form: &str) -> String {
    if form.starts_with("enc:v2") {
        format!("{what} is stored as enc:v2, whose format is not public")
    } else {
        format!("{what} cannot be read: {form}")
    }
}

fn json_fact(facts: &[(String, FactValue)], name: &str) -> Value {
    match fact(facts, name) {
        Some(FactValue::Json(text)) => serde_json::from_str(text).unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

fn presence(facts: &[(String, FactValue)], name: &str) -> Presence {
    match fact(facts, name) {
        Some(FactValue::Presence(presence)) => presence.clone(),
        _ => Presence::Absent,
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// `zcode-builtin:<table revision>:<SHA-256 hex of the table path string>`: the Agent's own
/// table revision as measured on 3.14 (reference APP `provider/updateAccountConfig`;
/// `docs/coding-plan.md` F9), the path being the one the launch plan hands the Agent.
pub fn builtin_revision(revision: &Value, path: &str) -> Option<String> {
    let revision = match revision {
        Value::Number(number) => number.to_string(),
        Value::String(text) if !text.trim().is_empty() => text.trim().to_string(),
        _ => return None,
    };
    Some(format!("zcode-builtin:{revision}:{}", sha256_hex(path.as_bytes())))
}

/// The account state of a session's facts (a pure function: the tests pin it).
pub fn account_state(facts: &[(String, FactValue)]) -> AccountState {
    // A core or trace that hands over no facts: nothing to say, nothing to push.
    if fact(facts, TABLE_REVISION).is_none() {
        return AccountState::default();
    }
    let path = json_fact(facts, TABLE_PATH);
    let based_on =
        path.as_str().and_then(|p| builtin_revision(&json_fact(facts, TABLE_REVISION), p));
    let family = json_fact(facts, FAMILY);
    let selections = json_fact(facts, SELECTIONS);
    let mut providers = BTreeMap::new();
    let mut states = BTreeMap::new();
    let mut state = AccountState::default();
    for f in FAMILIES {
        let id = provider_id(f);
        let signed_in = presence(facts, &format!("{SIGNED_IN}{f}"));
        let key = presence(facts, &format!("{PLAN_KEY}{f}"));
        let selected = family.as_str() == Some(f)
            && selections.pointer(&format!("/{f}/kind")).and_then(Value::as_str)
                == Some(INDIVIDUAL_PLAN);
        // (availability, unavailableReason, why not listed)
        let verdict: Result<(), (&str, Option<&str>, String)> = match (&signed_in, &key) {
            (Presence::Absent, _) => {
                Err(("unavailable", Some("not-connected"), REASON_NOT_SIGNED_IN.into()))
            }
            (Presence::Unreadable(form), _) => Err((
                "unavailable",
                Some("credential-failed"),
                unreadable_reason("the ZCode sign-in", form),
            )),
            (_, Presence::Unreadable(form)) => Err((
                "unavailable",
                Some("credential-failed"),
                unreadable_reason("the Coding Plan key", form),
            )),
            (_, Presence::Absent) => Err(("unknown", None, REASON_NO_KEY.into())),
            _ if family.is_null() => Err(("unknown", None, REASON_NO_FAMILY.into())),
            _ if !selected => Err(("unknown", None, REASON_OTHER_PLAN.into())),
            _ if based_on.is_none() => Err(("unknown", None, REASON_NO_TABLE.into())),
            _ => Ok(()),
        };
        let entitled = verdict.is_ok();
        // Only a family the user signed in to or selected is worth a reason: someone who never
        // used a Coding Plan is told nothing.
        let concerned = signed_in != Presence::Absent || family.as_str() == Some(f);
        providers
            .insert(id.clone(), json!({"access": {"type": "zhipu-account", "entitled": entitled}}));
        let mut s = json!({
            "availability": if entitled { "available" } else { "unknown" },
            "entitled": entitled,
            // Required for an entitled built-in provider (Z3151
            // `parseProcessAccountProviderConfigSnapshot`); Desktop's rule: the selected plan
            // of the selected family (`accountProviderConnectionResolver.ts`).
            "current": selected,
        });
        match verdict {
            Ok(()) => state.entitled.push(id.clone()),
            Err((availability, reason, why)) => {
                s["availability"] = json!(availability);
                if let Some(reason) = reason {
                    s["unavailableReason"] = json!(reason);
                }
                if concerned {
                    state.unlisted.push((id.clone(), why));
                }
            }
        }
        states.insert(id, s);
    }
    if let (Some(based_on), false) = (based_on, state.entitled.is_empty()) {
        let mut params = json!({
            "basedOnZCodeBuiltinRevision": based_on,
            "providers": providers,
            "states": states,
        });
        // Content-addressed, as Desktop's: the same state is the same revision, which the
        // Agent answers `unchanged`.
        params["revision"] =
            json!(format!("zcode-acp:{}", sha256_hex(canonical(&params).as_bytes())));
        state.push = Some(params);
    }
    state
}

/// JSON text with every object's keys sorted, whatever order the build's maps keep (a
/// `preserve_order` feature elsewhere in a build must not change the revision).
fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let members: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", members.join(","))
        }
        Value::Array(items) => {
            format!("[{}]", items.iter().map(canonical).collect::<Vec<_>>().join(","))
        }
        other => other.to_string(),
    }
}

/// `[{providerId, reason}]`, as a session's `_meta` and the probe's answer carry them.
fn unlisted_list(unlisted: &[(String, String)]) -> Vec<Value> {
    unlisted
        .iter()
        .map(|(provider, reason)| json!({"providerId": provider, "reason": reason}))
        .collect()
}

/// `_meta.zcodeAcp.unlistedAccountProviders` of an opened session, when any is unlisted.
pub fn unlisted_meta(unlisted: &[(String, String)]) -> Option<Value> {
    if unlisted.is_empty() {
        return None;
    }
    Some(json!({"zcodeAcp": {"unlistedAccountProviders": unlisted_list(unlisted)}}))
}

/// `doctor`'s probe answer for the facts it carries: the plan providers a session would leave
/// unlisted, with the same reasons (`account_state`, as a session computes them before it
/// pushes), as `unlistedAccountProviders` and as `notes` (the lines `doctor` prints, WIT
/// `connection-op.probe`). `{}` when there is nothing to say. What only a session can learn
/// (the Agent has no push method, or ignored the push) is not known here: the probe pushes
/// nothing, since the push is process-wide and a probe must not change the Agent's state.
pub fn probe_answer(facts: &[(String, FactValue)]) -> Value {
    let unlisted = account_state(facts).unlisted;
    if unlisted.is_empty() {
        return json!({});
    }
    let notes: Vec<String> = unlisted
        .iter()
        .map(|(provider, reason)| {
            format!("Coding Plan models of {provider} are not listed: {reason}")
        })
        .collect();
    json!({"unlistedAccountProviders": unlisted_list(&unlisted), "notes": notes})
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &str = "/opt/ZCode/resources/config/provider/zcode-builtin.json";
    /// `ProviderConfig { table: PATH, revision: "31" }.builtin_revision()` of the simulator
    /// (`host/simulator/src/app_server/provider_config.rs`): the SHA-256 hex of the path string.
    const BASED_ON: &str =
        "zcode-builtin:31:7db644f0d19be408386cb8278c4b50f189651860e8a492d7ab830b91f1a860c5";

    fn json(name: &str, value: Value) -> (String, FactValue) {
        (name.to_string(), FactValue::Json(value.to_string()))
    }

    fn presence(name: &str, family: &str, value: Presence) -> (String, FactValue) {
        (format!("{name}{family}"), FactValue::Presence(value))
    }

    /// Signed in to zai with a readable key, and the zai individual plan selected.
    fn facts() -> Vec<(String, FactValue)> {
        vec![
            json(TABLE_REVISION, json!(31)),
            json(TABLE_PATH, json!(PATH)),
            json(FAMILY, json!("zai")),
            json(SELECTIONS, json!({"zai": {"kind": "individual-coding-plan"}})),
            presence(SIGNED_IN, "zai", Presence::Present),
            presence(PLAN_KEY, "zai", Presence::Present),
            presence(SIGNED_IN, "bigmodel", Presence::Absent),
            presence(PLAN_KEY, "bigmodel", Presence::Absent),
        ]
    }

    fn with(
        mut facts: Vec<(String, FactValue)>,
        change: (String, FactValue),
    ) -> Vec<(String, FactValue)> {
        facts.retain(|(name, _)| *name != change.0);
        facts.push(change);
        facts
    }

    #[test]
    fn the_builtin_revision_is_the_simulators() {
        assert_eq!(builtin_revision(&json!(31), PATH).as_deref(), Some(BASED_ON));
        assert_eq!(builtin_revision(&json!("31"), PATH).as_deref(), Some(BASED_ON));
        assert_eq!(builtin_revision(&Value::Null, PATH), None);
    }

    #[test]
    fn signed_in_with_a_key_and_the_plan_selected_pushes_exactly_this() {
        let state = account_state(&facts());
        let mut push = state.push.expect("entitled");
        let revision = push.as_object_mut().unwrap().remove("revision").unwrap();
        assert_eq!(
            push,
            json!({
                "basedOnZCodeBuiltinRevision": BASED_ON,
                "providers": {
                    "account:bigmodel-individual-coding-plan":
                        {"access": {"type": "zhipu-account", "entitled": false}},
                    "account:zai-individual-coding-plan":
                        {"access": {"type": "zhipu-account", "entitled": true}},
                },
                "states": {
                    "account:bigmodel-individual-coding-plan": {
                        "availability": "unavailable", "entitled": false, "current": false,
                        "unavailableReason": "not-connected",
                    },
                    "account:zai-individual-coding-plan":
                        {"availability": "available", "entitled": true, "current": true},
                },
            })
        );
        let expected = format!("zcode-acp:{}", sha256_hex(canonical(&push).as_bytes()));
        let sorted = canonical(&json!({"b": 1, "a": [{"d": 2, "c": 3}]}));
        assert_eq!(sorted, r#"{"a":[{"c":3,"d":2}],"b":1}"#);
        assert_eq!(revision, json!(expected));
        assert_eq!(state.entitled, vec!["account:zai-individual-coding-plan".to_string()]);
        // bigmodel: neither signed in nor selected, so nothing is said about it.
        assert!(state.unlisted.is_empty());
        // The same facts are the same revision (the Agent answers `unchanged`).
        assert_eq!(account_state(&facts()).push.unwrap()["revision"], revision);
    }

    fn only_reason(facts: &[(String, FactValue)]) -> String {
        let state = account_state(facts);
        assert_eq!(state.push, None, "nothing entitled, nothing pushed");
        assert_eq!(state.unlisted.len(), 1, "{:?}", state.unlisted);
        assert_eq!(state.unlisted[0].0, "account:zai-individual-coding-plan");
        state.unlisted[0].1.clone()
    }

    #[test]
    fn without_a_key_nothing_is_pushed_and_the_reason_says_so() {
        let facts = with(facts(), presence(PLAN_KEY, "zai", Presence::Absent));
        assert_eq!(only_reason(&facts), REASON_NO_KEY);
    }

    #[test]
    fn an_enc_v2_key_is_named() {
        let facts = with(facts(), presence(PLAN_KEY, "zai", Presence::Unreadable("enc:v2".into())));
        let reason = only_reason(&facts);
        assert!(reason.contains("enc:v2") && reason.contains("not public"), "{reason}");
    }

    #[test]
    fn another_plan_or_family_selected_is_not_entitled() {
        let team = with(facts(), json(SELECTIONS, json!({"zai": {"kind": "team-coding-plan"}})));
        assert_eq!(only_reason(&team), REASON_OTHER_PLAN);
        let other_family = with(facts(), json(FAMILY, json!("bigmodel")));
        let state = account_state(&other_family);
        assert_eq!(state.push, None);
        assert!(
            state.unlisted.iter().any(|(id, why)| id.contains("zai") && why == REASON_OTHER_PLAN)
        );
        let no_family = with(facts(), json(FAMILY, Value::Null));
        assert_eq!(only_reason(&no_family), REASON_NO_FAMILY);
    }

    #[test]
    fn not_signed_in_or_no_facts_says_and_pushes_nothing() {
        let facts = with(facts(), presence(SIGNED_IN, "zai", Presence::Absent));
        assert_eq!(only_reason(&facts), REASON_NOT_SIGNED_IN);
        assert_eq!(account_state(&[]), AccountState::default());
    }
}
