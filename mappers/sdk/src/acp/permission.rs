//! Permission questions: the native options become ACP permission options one to one, and the
//! answer is the chosen option only if it was offered; anything else (a failed, cancelled or
//! unknown answer) is the native option that denies. A mapper says how its host words the
//! options and where the answer goes.

use zcode_contract::{InteractionOutcome, InteractionRequest, PermissionRequest};

use super::update::ToolCallUpdate;
use super::write::Obj;

/// ACP `PermissionOptionKind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionKind {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
}

impl OptionKind {
    /// The kind of a native option that allows or not, and is remembered or not.
    pub fn of(allows: bool, remembered: bool) -> Self {
        match (allows, remembered) {
            (true, false) => OptionKind::AllowOnce,
            (true, true) => OptionKind::AllowAlways,
            (false, false) => OptionKind::RejectOnce,
            (false, true) => OptionKind::RejectAlways,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            OptionKind::AllowOnce => "allow_once",
            OptionKind::AllowAlways => "allow_always",
            OptionKind::RejectOnce => "reject_once",
            OptionKind::RejectAlways => "reject_always",
        }
    }
}

/// One option of a permission question; `id` is the native option id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PermissionOption<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub kind: OptionKind,
}

/// The `permission` interaction: `{toolCall, options}` for `session/request_permission`, and
/// `deny`, the native option the core selects when the client cannot answer.
pub fn request(
    tool_call: &ToolCallUpdate<'_>,
    options: &[PermissionOption<'_>],
    deny: &str,
) -> InteractionRequest {
    let options: Vec<String> = options
        .iter()
        .map(|option| {
            Obj::new()
                .str("optionId", option.id)
                .str("name", option.name)
                .str("kind", option.kind.name())
                .end()
        })
        .collect();
    // The tool call is written in place: it can carry megabytes (a write's content, twice).
    let request = Obj::new()
        .object("toolCall", |object| tool_call.write(object))
        .raw_list("options", options.iter().map(String::as_str))
        .end();
    InteractionRequest::Permission(PermissionRequest { request, deny_option: deny.to_string() })
}

/// The option that declines a question asked as a permission when the host's own refusal is a
/// decline, not one of its options (a question's choices, a plan approval asked as a question).
pub const DECLINE_OPTION: &str = "zcode-acp:decline";

/// A question asked as a permission, for a client that cannot render forms (the way peers ask
/// plan approval: the Claude adapter's `ExitPlanMode` is an ordinary `session/request_permission`
/// with approve / keep planning options). The tool call is the host's when it names one, else one
/// named after the interaction `key`; either way titled with the question, with `detail` (such
/// as a plan no update shows) as its text content. `None` when the options cannot be told apart
/// (empty, or an id given twice) or the deny is not among them: the question is not asked.
pub fn choice_request(
    key: &str,
    tool_call_id: Option<&str>,
    title: &str,
    detail: Option<&str>,
    options: &[PermissionOption<'_>],
    deny: &str,
) -> Option<InteractionRequest> {
    let ids: std::collections::BTreeSet<&str> = options.iter().map(|option| option.id).collect();
    if options.is_empty() || ids.len() != options.len() || !ids.contains(deny) {
        return None;
    }
    let own = format!("zcode-acp:{key}");
    let id = tool_call_id.filter(|id| !id.is_empty()).unwrap_or(&own);
    let content: Vec<serde_json::Value> = detail
        .map(|text| serde_json::json!({"type": "content", "content": {"type": "text", "text": text}}))
        .into_iter()
        .collect();
    let tool_call = ToolCallUpdate {
        title: Some(title),
        content: (!content.is_empty()).then_some(&content[..]),
        ..ToolCallUpdate::new(id)
    };
    Some(request(&tool_call, options, deny))
}

/// The options a question offered and the one that denies: what the answer may select.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offered {
    options: Vec<String>,
    deny: String,
}

impl Offered {
    pub fn new(options: impl IntoIterator<Item = String>, deny: impl Into<String>) -> Self {
        Self { options: options.into_iter().collect(), deny: deny.into() }
    }

    /// The native option to answer with: the selected one if it was offered, else the deny.
    pub fn choose<'a>(&'a self, outcome: &'a InteractionOutcome) -> &'a str {
        match outcome {
            InteractionOutcome::Selected(id) if self.options.contains(id) => id,
            _ => &self.deny,
        }
    }

    pub fn deny(&self) -> &str {
        &self.deny
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::acp_check;

    #[test]
    fn asks_with_the_native_options_and_their_deny() {
        let input = json!({"command": "ls"});
        let tool = ToolCallUpdate {
            title: Some("Run ls"),
            kind: Some("execute"),
            raw_input: Some(&input),
            ..ToolCallUpdate::new("t1")
        };
        let options = [
            PermissionOption { id: "yes", name: "Allow", kind: OptionKind::of(true, false) },
            PermissionOption { id: "always", name: "Always", kind: OptionKind::of(true, true) },
            PermissionOption { id: "no", name: "Deny", kind: OptionKind::of(false, false) },
        ];
        let InteractionRequest::Permission(asked) = request(&tool, &options, "no") else {
            panic!()
        };
        assert_eq!(asked.deny_option, "no");
        let value: Value = serde_json::from_str(&asked.request).unwrap();
        acp_check::permission(&value);
        assert_eq!(
            value,
            json!({"toolCall": {"toolCallId": "t1", "title": "Run ls", "kind": "execute", "rawInput": {"command": "ls"}},
                   "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                               {"optionId": "always", "name": "Always", "kind": "allow_always"},
                               {"optionId": "no", "name": "Deny", "kind": "reject_once"}]})
        );
        assert_eq!(OptionKind::of(false, true).name(), "reject_always");
    }

    #[test]
    fn asks_a_question_as_a_permission_under_its_own_tool_call() {
        let options = [
            PermissionOption { id: "a", name: "A", kind: OptionKind::AllowOnce },
            PermissionOption { id: DECLINE_OPTION, name: "Decline", kind: OptionKind::RejectOnce },
        ];
        let Some(InteractionRequest::Permission(asked)) =
            choice_request("input:r1", None, "Which?", None, &options, DECLINE_OPTION)
        else {
            panic!()
        };
        assert_eq!(asked.deny_option, DECLINE_OPTION);
        let value: Value = serde_json::from_str(&asked.request).unwrap();
        acp_check::permission(&value);
        assert_eq!(
            value["toolCall"],
            json!({"toolCallId": "zcode-acp:input:r1", "title": "Which?"})
        );
        let named =
            choice_request("k", Some("t9"), "Plan", Some("# Plan"), &options, DECLINE_OPTION);
        let Some(InteractionRequest::Permission(named)) = named else { panic!() };
        let named: Value = serde_json::from_str(&named.request).unwrap();
        acp_check::permission(&named);
        assert_eq!(
            named["toolCall"],
            json!({"toolCallId": "t9", "title": "Plan", "content": [
                {"type": "content", "content": {"type": "text", "text": "# Plan"}}]})
        );
        // Options that cannot be told apart, or a deny that is not offered: not asked.
        let twice = [options[0], options[0]];
        assert!(choice_request("k", None, "?", None, &twice, "a").is_none());
        assert!(choice_request("k", None, "?", None, &options, "other").is_none());
        assert!(choice_request("k", None, "?", None, &[], "a").is_none());
    }

    #[test]
    fn answers_an_offered_option_or_the_deny() {
        let offered = Offered::new(["yes".to_string(), "no".to_string()], "no");
        let selected = |id: &str| InteractionOutcome::Selected(id.into());
        assert_eq!(offered.choose(&selected("yes")), "yes");
        assert_eq!(offered.choose(&selected("other")), "no");
        assert_eq!(offered.choose(&InteractionOutcome::Unavailable("gone".into())), "no");
        assert_eq!(offered.choose(&InteractionOutcome::Elicited("{}".into())), "no");
        assert_eq!(offered.deny(), "no");
    }
}
