//! How the demo answers permission requests and forms: from a flag, from a typed reply, or
//! by refusing when nobody can be asked. Pure decisions; the client does the I/O.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use agent_client_protocol::v1::schema::{
    ElicitationContentValue, ElicitationPropertySchema, ElicitationSchema, EnumOption,
    MultiSelectItems, PermissionOption, PermissionOptionKind,
};

/// Who answers the agent's questions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// The person at the terminal.
    Ask,
    /// `--yes`: allow permissions, accept the first option of each question.
    AllowAll,
    /// `--no`: reject permissions, decline forms.
    RejectAll,
    /// No flag and stdin is not a terminal: refuse, as `--no` does, and say why.
    NoTerminal,
}

impl Policy {
    pub fn new(yes: bool, no: bool, stdin_is_terminal: bool) -> Self {
        match (yes, no, stdin_is_terminal) {
            (true, _, _) => Policy::AllowAll,
            (_, true, _) => Policy::RejectAll,
            (_, _, true) => Policy::Ask,
            _ => Policy::NoTerminal,
        }
    }

    /// Why an automatic answer was chosen, shown next to it.
    pub fn reason(self) -> &'static str {
        match self {
            Policy::AllowAll => "--yes",
            Policy::RejectAll => "--no",
            Policy::NoTerminal => "stdin is not a terminal; pass --yes or --no",
            Policy::Ask => "",
        }
    }
}

fn allows(kind: PermissionOptionKind) -> bool {
    matches!(kind, PermissionOptionKind::AllowOnce | PermissionOptionKind::AllowAlways)
}

fn rejects(kind: PermissionOptionKind) -> bool {
    matches!(kind, PermissionOptionKind::RejectOnce | PermissionOptionKind::RejectAlways)
}

fn first_allow(options: &[PermissionOption]) -> Option<usize> {
    options.iter().position(|option| allows(option.kind))
}

fn first_reject(options: &[PermissionOption]) -> Option<usize> {
    options.iter().position(|option| rejects(option.kind))
}

/// The option an automatic policy picks, by index. `--yes` falls back to rejecting when
/// nothing can be allowed; `None` (no option fits) is answered `cancelled`.
pub fn automatic_permission(options: &[PermissionOption], policy: Policy) -> Option<usize> {
    match policy {
        Policy::AllowAll => first_allow(options).or_else(|| first_reject(options)),
        Policy::RejectAll | Policy::NoTerminal | Policy::Ask => first_reject(options),
    }
}

/// A typed reply to a permission prompt: an option number, or `y`/`n` for the first
/// allow/reject option. `None` when the reply names no option.
pub fn parse_permission_reply(options: &[PermissionOption], reply: &str) -> Option<usize> {
    let reply = reply.trim().to_lowercase();
    if let Ok(number) = reply.parse::<usize>() {
        return (1..=options.len()).contains(&number).then(|| number - 1);
    }
    match reply.as_str() {
        "y" | "yes" => first_allow(options),
        "n" | "no" => first_reject(options),
        _ => None,
    }
}

/// One question of a form, in the order shown.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub key: String,
    pub label: String,
    pub detail: Option<String>,
    pub required: bool,
    pub kind: FieldKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum FieldKind {
    /// Pick exactly one.
    OneOf(Vec<Choice>),
    /// Pick at least `min`.
    AnyOf {
        choices: Vec<Choice>,
        min: usize,
    },
    Text {
        default: Option<String>,
    },
    Flag {
        default: Option<bool>,
    },
    Integer {
        default: Option<i64>,
    },
    Number {
        default: Option<f64>,
    },
    /// A schema type this client cannot fill in.
    Unsupported(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    pub value: String,
    pub title: String,
    pub detail: Option<String>,
}

impl Choice {
    fn from_option(option: &EnumOption) -> Self {
        Choice {
            value: option.value.clone(),
            title: option.title.clone(),
            detail: option.description.clone(),
        }
    }

    fn plain(value: &str) -> Self {
        Choice { value: value.to_string(), title: value.to_string(), detail: None }
    }
}

/// The form's questions. Properties arrive keyed in a sorted map, so `answer_10` would
/// come before `answer_2`; numeric suffixes are compared as numbers to keep the agent's order.
pub fn fields(schema: &ElicitationSchema) -> Vec<Field> {
    let required = schema.required.clone().unwrap_or_default();
    let mut fields: Vec<Field> = schema
        .properties
        .iter()
        .map(|(key, property)| field(key, property, required.contains(key)))
        .collect();
    fields.sort_by(|a, b| natural_order(&a.key, &b.key));
    fields
}

fn natural_order(a: &str, b: &str) -> Ordering {
    fn split(key: &str) -> (&str, Option<u64>) {
        let stem = key.trim_end_matches(|c: char| c.is_ascii_digit());
        (stem, key[stem.len()..].parse().ok())
    }
    split(a).cmp(&split(b)).then_with(|| a.cmp(b))
}

fn field(key: &str, property: &ElicitationPropertySchema, required: bool) -> Field {
    let (title, description, kind) = match property {
        ElicitationPropertySchema::String(s) => {
            let kind = match (&s.one_of, &s.enum_values) {
                (Some(options), _) => {
                    FieldKind::OneOf(options.iter().map(Choice::from_option).collect())
                }
                (None, Some(values)) => {
                    FieldKind::OneOf(values.iter().map(|v| Choice::plain(v)).collect())
                }
                (None, None) => FieldKind::Text { default: s.default.clone() },
            };
            (&s.title, &s.description, kind)
        }
        ElicitationPropertySchema::Array(a) => {
            let choices = match &a.items {
                MultiSelectItems::String(items) => {
                    items.values.iter().map(|v| Choice::plain(v)).collect()
                }
                MultiSelectItems::Titled(items) => {
                    items.options.iter().map(Choice::from_option).collect()
                }
                other => return unsupported(key, required, &format!("{other:?}")),
            };
            let min = usize::try_from(a.min_items.unwrap_or(0)).unwrap_or(usize::MAX);
            (&a.title, &a.description, FieldKind::AnyOf { choices, min })
        }
        ElicitationPropertySchema::Boolean(b) => {
            (&b.title, &b.description, FieldKind::Flag { default: b.default })
        }
        ElicitationPropertySchema::Integer(i) => {
            (&i.title, &i.description, FieldKind::Integer { default: i.default })
        }
        ElicitationPropertySchema::Number(n) => {
            (&n.title, &n.description, FieldKind::Number { default: n.default })
        }
        ElicitationPropertySchema::Other(other) => return unsupported(key, required, &other.type_),
        other => return unsupported(key, required, &format!("{other:?}")),
    };
    Field {
        key: key.to_string(),
        label: title.clone().unwrap_or_else(|| key.to_string()),
        detail: description.clone(),
        required,
        kind,
    }
}

fn unsupported(key: &str, required: bool, what: &str) -> Field {
    Field {
        key: key.to_string(),
        label: key.to_string(),
        detail: None,
        required,
        kind: FieldKind::Unsupported(what.to_string()),
    }
}

/// What to send back for a form.
#[derive(Clone, Debug, PartialEq)]
pub enum FormAnswer {
    Accept(BTreeMap<String, ElicitationContentValue>),
    Decline,
    /// Dismissed without a decision (Ctrl-C).
    Cancel,
}

/// `--yes` accepts the first option of each question (defaults where there are no options);
/// a required question it cannot fill declines the form. Every other policy declines.
pub fn automatic_form(fields: &[Field], policy: Policy) -> FormAnswer {
    if policy != Policy::AllowAll {
        return FormAnswer::Decline;
    }
    let mut content = BTreeMap::new();
    for field in fields {
        match automatic_value(field) {
            Some(value) => {
                content.insert(field.key.clone(), value);
            }
            None if field.required => return FormAnswer::Decline,
            None => {}
        }
    }
    FormAnswer::Accept(content)
}

fn automatic_value(field: &Field) -> Option<ElicitationContentValue> {
    match &field.kind {
        FieldKind::OneOf(choices) => choices.first().map(|c| c.value.clone().into()),
        FieldKind::AnyOf { choices, min } => {
            let take = (*min).max(1);
            (choices.len() >= take).then(|| {
                ElicitationContentValue::StringArray(
                    choices.iter().take(take).map(|c| c.value.clone()).collect(),
                )
            })
        }
        FieldKind::Text { default } => default.clone().map(Into::into),
        FieldKind::Flag { default } => Some(default.unwrap_or(true).into()),
        FieldKind::Integer { default } => default.map(Into::into),
        FieldKind::Number { default } => default.map(Into::into),
        FieldKind::Unsupported(_) => None,
    }
}

/// A typed reply to one question.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    Value(ElicitationContentValue),
    /// Leave an optional question unanswered.
    Skip,
    /// Decline the whole form.
    Decline,
}

/// What to type, shown in the prompt.
pub fn hint(field: &Field) -> String {
    let answer = match &field.kind {
        FieldKind::OneOf(choices) => format!("1-{}", choices.len()),
        FieldKind::AnyOf { .. } => "numbers, e.g. 1,2".to_string(),
        FieldKind::Text { .. } => "text".to_string(),
        FieldKind::Flag { .. } => "y/n".to_string(),
        FieldKind::Integer { .. } | FieldKind::Number { .. } => "a number".to_string(),
        FieldKind::Unsupported(_) => "cannot be answered here".to_string(),
    };
    let empty = if field.required { "" } else { ", empty to skip" };
    format!("{answer}{empty}, d to decline")
}

/// Parses a typed reply; `Err` says what was wrong so the question can be asked again.
pub fn parse_reply(field: &Field, reply: &str) -> Result<Reply, String> {
    let reply = reply.trim();
    if matches!(reply.to_lowercase().as_str(), "d" | "decline") {
        return Ok(Reply::Decline);
    }
    if reply.is_empty() {
        return match default_value(field) {
            Some(value) => Ok(Reply::Value(value)),
            None if field.required => Err("an answer is required (d declines the form)".into()),
            None => Ok(Reply::Skip),
        };
    }
    let value = match &field.kind {
        FieldKind::OneOf(choices) => {
            ElicitationContentValue::String(pick(choices, reply)?.value.clone())
        }
        FieldKind::AnyOf { choices, min } => {
            let picked = reply
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|part| !part.is_empty())
                .map(|part| pick(choices, part).map(|c| c.value.clone()))
                .collect::<Result<Vec<_>, _>>()?;
            if picked.len() < *min {
                return Err(format!("choose at least {min}"));
            }
            ElicitationContentValue::StringArray(picked)
        }
        FieldKind::Text { .. } => ElicitationContentValue::String(reply.to_string()),
        FieldKind::Flag { .. } => match reply.to_lowercase().as_str() {
            "y" | "yes" | "true" => true.into(),
            "n" | "no" | "false" => false.into(),
            _ => return Err("answer y or n".into()),
        },
        FieldKind::Integer { .. } => {
            reply.parse::<i64>().map_err(|_| "expected a whole number".to_string())?.into()
        }
        FieldKind::Number { .. } => {
            reply.parse::<f64>().map_err(|_| "expected a number".to_string())?.into()
        }
        FieldKind::Unsupported(what) => return Err(format!("this client cannot answer {what}")),
    };
    Ok(Reply::Value(value))
}

fn default_value(field: &Field) -> Option<ElicitationContentValue> {
    match &field.kind {
        FieldKind::Text { default } => default.clone().map(Into::into),
        FieldKind::Flag { default } => default.map(Into::into),
        FieldKind::Integer { default } => default.map(Into::into),
        FieldKind::Number { default } => default.map(Into::into),
        _ => None,
    }
}

/// A choice by number, value or title.
fn pick<'a>(choices: &'a [Choice], reply: &str) -> Result<&'a Choice, String> {
    let by_number = reply.parse::<usize>().ok().and_then(|n| n.checked_sub(1));
    by_number
        .and_then(|index| choices.get(index))
        .or_else(|| {
            choices.iter().find(|c| {
                c.value.eq_ignore_ascii_case(reply) || c.title.eq_ignore_ascii_case(reply)
            })
        })
        .ok_or_else(|| format!("no option {reply:?}; choose 1-{}", choices.len()))
}

/// An answer as a person reads it: choices by title.
pub fn shown(field: &Field, value: &ElicitationContentValue) -> String {
    let title = |value: &str| match &field.kind {
        FieldKind::OneOf(choices) | FieldKind::AnyOf { choices, .. } => choices
            .iter()
            .find(|c| c.value == value)
            .map_or_else(|| value.to_string(), |c| c.title.clone()),
        _ => value.to_string(),
    };
    match value {
        ElicitationContentValue::String(s) => title(s),
        ElicitationContentValue::StringArray(items) => {
            items.iter().map(|item| title(item)).collect::<Vec<_>>().join(", ")
        }
        ElicitationContentValue::Boolean(b) => if *b { "yes" } else { "no" }.to_string(),
        ElicitationContentValue::Integer(i) => i.to_string(),
        ElicitationContentValue::Number(n) => n.to_string(),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn options(kinds: &[(&str, &str)]) -> Vec<PermissionOption> {
        serde_json::from_value(json!(
            kinds
                .iter()
                .map(|(id, kind)| json!({"optionId": id, "name": id, "kind": kind}))
                .collect::<Vec<_>>()
        ))
        .unwrap()
    }

    /// The question form the zcode-task-v1 mapper builds for the simulator's `sim:question`.
    fn question_schema() -> ElicitationSchema {
        serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "answer_0": {"type": "string", "title": "Approach",
                    "description": "Which approach should I take?",
                    "oneOf": [{"const": "fast", "title": "Fast", "description": "A small, quick change"},
                              {"const": "thorough", "title": "Thorough"}]},
                "answer_1": {"type": "array", "title": "Checks", "description": "Which checks should run?",
                    "minItems": 1,
                    "items": {"anyOf": [{"const": "tests", "title": "Tests"}, {"const": "lint", "title": "Lint"}]}}
            },
            "required": ["answer_0", "answer_1"]
        }))
        .unwrap()
    }

    #[test]
    fn policy_follows_flags_then_the_terminal() {
        assert_eq!(Policy::new(true, false, false), Policy::AllowAll);
        assert_eq!(Policy::new(false, true, true), Policy::RejectAll);
        assert_eq!(Policy::new(false, false, true), Policy::Ask);
        assert_eq!(Policy::new(false, false, false), Policy::NoTerminal);
    }

    #[test]
    fn automatic_permissions_pick_the_first_option_of_the_right_kind() {
        let opts =
            options(&[("always", "allow_always"), ("once", "allow_once"), ("no", "reject_once")]);
        assert_eq!(automatic_permission(&opts, Policy::AllowAll), Some(0));
        assert_eq!(automatic_permission(&opts, Policy::RejectAll), Some(2));
        assert_eq!(automatic_permission(&opts, Policy::NoTerminal), Some(2));
    }

    #[test]
    fn yes_never_allows_without_an_allow_option_and_no_never_allows() {
        let reject_only = options(&[("no", "reject_once")]);
        assert_eq!(automatic_permission(&reject_only, Policy::AllowAll), Some(0));
        let allow_only = options(&[("yes", "allow_once")]);
        assert_eq!(automatic_permission(&allow_only, Policy::RejectAll), None);
        assert_eq!(automatic_permission(&allow_only, Policy::NoTerminal), None);
    }

    #[test]
    fn permission_replies_are_numbers_or_yes_no() {
        let opts = options(&[("no", "reject_once"), ("yes", "allow_once")]);
        assert_eq!(parse_permission_reply(&opts, " 2 "), Some(1));
        assert_eq!(parse_permission_reply(&opts, "y"), Some(1));
        assert_eq!(parse_permission_reply(&opts, "No"), Some(0));
        assert_eq!(parse_permission_reply(&opts, "3"), None);
        assert_eq!(parse_permission_reply(&opts, "0"), None);
        assert_eq!(parse_permission_reply(&opts, "maybe"), None);
    }

    #[test]
    fn fields_keep_numeric_order_and_read_choices() {
        let mut properties = serde_json::Map::new();
        for index in [10, 2, 1] {
            properties.insert(format!("answer_{index}"), json!({"type": "string"}));
        }
        let schema: ElicitationSchema =
            serde_json::from_value(json!({"type": "object", "properties": properties})).unwrap();
        let keys: Vec<_> = fields(&schema).into_iter().map(|f| f.key).collect();
        assert_eq!(keys, ["answer_1", "answer_2", "answer_10"]);

        let form = fields(&question_schema());
        assert_eq!(form[0].label, "Approach");
        assert_eq!(form[0].detail.as_deref(), Some("Which approach should I take?"));
        assert!(form[0].required);
        let FieldKind::OneOf(choices) = &form[0].kind else { panic!("{:?}", form[0].kind) };
        assert_eq!(choices[0].detail.as_deref(), Some("A small, quick change"));
        assert!(
            matches!(&form[1].kind, FieldKind::AnyOf { choices, min: 1 } if choices.len() == 2)
        );
    }

    #[test]
    fn yes_accepts_the_first_option_of_each_question() {
        let form = fields(&question_schema());
        let FormAnswer::Accept(content) = automatic_form(&form, Policy::AllowAll) else {
            panic!("declined")
        };
        assert_eq!(content["answer_0"], "fast".into());
        assert_eq!(content["answer_1"], vec!["tests"].into());
        assert_eq!(automatic_form(&form, Policy::RejectAll), FormAnswer::Decline);
        assert_eq!(automatic_form(&form, Policy::NoTerminal), FormAnswer::Decline);
    }

    #[test]
    fn yes_declines_a_required_question_it_cannot_fill() {
        let schema: ElicitationSchema = serde_json::from_value(json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "note": {"type": "string", "default": "hi"}},
            "required": ["name"]
        }))
        .unwrap();
        assert_eq!(automatic_form(&fields(&schema), Policy::AllowAll), FormAnswer::Decline);
    }

    #[test]
    fn typed_replies_pick_by_number_value_or_title() {
        let form = fields(&question_schema());
        assert_eq!(parse_reply(&form[0], "2"), Ok(Reply::Value("thorough".into())));
        assert_eq!(parse_reply(&form[0], "FAST"), Ok(Reply::Value("fast".into())));
        assert!(parse_reply(&form[0], "3").unwrap_err().contains("choose 1-2"));
        assert!(parse_reply(&form[0], "").is_err(), "a required question needs an answer");
        assert_eq!(parse_reply(&form[0], "d"), Ok(Reply::Decline));
        assert_eq!(parse_reply(&form[1], "2, 1"), Ok(Reply::Value(vec!["lint", "tests"].into())));
        assert_eq!(shown(&form[1], &vec!["lint", "tests"].into()), "Lint, Tests");
    }

    #[test]
    fn typed_replies_for_plain_fields_use_defaults_and_validate() {
        let schema: ElicitationSchema = serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "a": {"type": "boolean", "default": false},
                "b": {"type": "integer"},
                "c": {"type": "string"}
            },
            "required": ["b"]
        }))
        .unwrap();
        let form = fields(&schema);
        assert_eq!(parse_reply(&form[0], ""), Ok(Reply::Value(false.into())));
        assert_eq!(parse_reply(&form[0], "yes"), Ok(Reply::Value(true.into())));
        assert!(parse_reply(&form[1], "x").is_err());
        assert_eq!(parse_reply(&form[1], "42"), Ok(Reply::Value(42.into())));
        assert_eq!(parse_reply(&form[2], ""), Ok(Reply::Skip));
        assert_eq!(parse_reply(&form[2], "free text"), Ok(Reply::Value("free text".into())));
        assert_eq!(hint(&form[2]), "text, empty to skip, d to decline");
    }
}
