//! What the three turn runners share: how a turn halts, its stop signal, the token estimate,
//! the results of scripted tools and the answers a turn reads. Each generation renders the
//! steps of a scenario in its own protocol; these are the parts that do not depend on it.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use super::scenario::{Effect, ToolCall, ToolOutcome, UsageOverride};

/// Why a turn's steps stopped early.
#[derive(Debug)]
pub enum Halt {
    /// Stopped (or preempted).
    Cancelled,
    /// A step ended the turn with this result type.
    Completed(String),
    /// The model request or a step failed: the turn fails with this error.
    Failed { kind: &'static str, message: String },
    /// The process froze, exited or lost the session: no end will ever come.
    Frozen,
}

pub type StepResult = Result<(), Halt>;

pub fn failed(kind: &'static str, message: impl Into<String>) -> Halt {
    Halt::Failed { kind, message: message.into() }
}

/// A turn's stop signal: set once the value leaves its default (`false`, or an interrupt).
#[derive(Clone)]
pub struct Stop<T>(pub watch::Receiver<T>);

impl<T: Default + PartialEq + Send + Sync> Stop<T> {
    pub fn check(&self) -> StepResult {
        if *self.0.borrow() == T::default() { Ok(()) } else { Err(Halt::Cancelled) }
    }

    /// Waits until the turn is stopped (at once if it is; also when the sender is gone).
    pub async fn stopped(&self) {
        let mut stop = self.0.clone();
        let _ = stop.wait_for(|state| *state != T::default()).await;
    }

    /// Sleeps `duration`, unless a stop comes first.
    pub async fn sleep(&self, duration: Duration) -> StepResult {
        tokio::select! {
            () = tokio::time::sleep(duration) => Ok(()),
            () = self.stopped() => Err(Halt::Cancelled),
        }
    }
}

/// Roughly four characters per token, the usual rule of thumb for English text and code.
pub fn estimate_tokens(text: &str) -> u64 {
    chars_to_tokens(text.chars().count() as u64)
}

pub fn chars_to_tokens(chars: u64) -> u64 {
    chars.div_ceil(4)
}

impl Effect {
    /// Performs the effect in the workspace and returns the tool's natural result.
    pub fn apply(&self, workspace: &Path) -> Result<Value, String> {
        match self {
            Effect::Write { path, content } => {
                let target = workspace.join(path);
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent)
                        .map_err(|error| format!("Cannot create {path}: {error}"))?;
                }
                std::fs::write(&target, content)
                    .map_err(|error| format!("Cannot write {path}: {error}"))?;
                Ok(json!({"content": format!("Wrote {} bytes to {path}", content.len())}))
            }
            Effect::Read { path } => match std::fs::read_to_string(workspace.join(path)) {
                Ok(text) => Ok(json!({"content": text})),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    Err(format!("File not found: {path}"))
                }
                Err(error) => Err(format!("Cannot read {path}: {error}")),
            },
        }
    }
}

impl ToolCall {
    /// Runs the effect (if any) and returns what the tool answers: an explicit result or
    /// error replaces the effect's natural one (the effect still happens).
    pub fn result(&self, workspace: &Path) -> Result<Value, String> {
        let effect = self.effect.as_ref().map(|effect| effect.apply(workspace));
        match (&self.outcome, effect) {
            (ToolOutcome::Result(value), _) => Ok(value.clone()),
            (ToolOutcome::Error(message), _) => Err(message.clone()),
            (ToolOutcome::Default, Some(result)) => result,
            (ToolOutcome::Default, None) => Ok(json!({"content": "ok"})),
        }
    }
}

/// `call_<24 hex>`, a tool call id the scripted model makes up. ZCode passes on the provider's
/// ids and fixes no length; 24 is what the quoted real tool turns carry (the Desktop 3.12.3
/// live record, issue 25 [B]: `mappers/zcode-app-server/traces/probe-log-b-*.jsonl`).
pub fn new_call_id() -> String {
    format!("call_{}", &uuid::Uuid::new_v4().simple().to_string()[..24])
}

/// What a turn used, in tokens, as a provider reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnTokens {
    pub input: u64,
    /// Everything the model wrote: text, reasoning and tool inputs.
    pub output: u64,
    /// The reasoning part of `output`.
    pub reasoning: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

/// What a turn sent and wrote, counted while it ran.
#[derive(Debug, Clone, Copy, Default)]
pub struct TurnCounts {
    /// The session's context when the turn began.
    pub context_before: u64,
    /// The turn's own input: prompt, attachments and injected guides.
    pub prompt_tokens: u64,
    pub model_requests: u64,
    /// Text and tool-input characters.
    pub output_chars: u64,
    pub reasoning_chars: u64,
}

impl TurnCounts {
    /// The estimate every generation on V4 reports, shaped like the real Desktop turn in probe
    /// log [A] §11.4 (`turn.completed`): every model request is billed for the whole context
    /// (16,743 input tokens for a 44-character prompt), the reasoning is inside `outputTokens`
    /// (19 for a turn whose reasoning outweighs its one-word answer, with `reasoningTokens: 0`),
    /// and the total is input plus output. A scenario's `usage` step overrides any count.
    pub fn tokens(&self, chosen: UsageOverride) -> TurnTokens {
        let requests = self.model_requests.max(1);
        TurnTokens {
            input: chosen.input.unwrap_or((self.context_before + self.prompt_tokens) * requests),
            output: chosen
                .output
                .unwrap_or(chars_to_tokens(self.output_chars + self.reasoning_chars)),
            reasoning: chosen.reasoning.unwrap_or(chars_to_tokens(self.reasoning_chars)),
            cache_read: chosen.cache_read.unwrap_or(self.context_before),
            cache_write: chosen.cache_creation.unwrap_or(self.prompt_tokens),
        }
    }
}

/// The text of a tool result (`content` when it is text).
pub fn output_text(value: &Value) -> String {
    match value.get("content").and_then(Value::as_str).or(value.as_str()) {
        Some(text) => text.to_owned(),
        None => value.to_string(),
    }
}

/// "Question: answer, answer" lines from an accepted question form.
pub fn answers_summary(content: &Value) -> String {
    match content.get("answers").and_then(Value::as_object) {
        Some(answers) => answers
            .iter()
            .map(|(question, values)| {
                let text =
                    |value: &Value| value.as_str().map_or_else(|| value.to_string(), str::to_owned);
                let picked: Vec<String> = match values {
                    Value::Array(items) => items.iter().map(text).collect(),
                    other => vec![text(other)],
                };
                format!("{question}: {}", picked.join(", "))
            })
            .collect::<Vec<_>>()
            .join("\n"),
        None => content.to_string(),
    }
}

/// The question a plan approval asks.
pub const PLAN_QUESTION: &str = "Review this implementation plan.";

/// The plan approval as a one-question form. Its one option approves; a client that does not
/// approve declines (with its feedback as the reason), and ZCode keeps planning (3.15.1
/// `interaction-broker.ts`, `createExitPlanModeApprovalQuestion`; the 3.11.2 frame in
/// `zcode-host-3.11.md` has the same single option).
pub fn plan_questions() -> Value {
    json!([{"question": PLAN_QUESTION, "header": "Plan", "options": [
        {"value": "approve", "label": "Approve", "description": "Exit plan mode and start implementation."}]}])
}

/// Whether a session's mode approves `tool` without asking: edits in `edit`, everything in
/// `yolo`, and a tool the user always allowed; while planning only the always-allowed ones.
pub fn auto_approved(mode: &str, planning: bool, always_allowed: bool, tool: &str) -> bool {
    let lowered = tool.to_lowercase();
    let is_edit = lowered.contains("write") || lowered.contains("edit");
    always_allowed || (!planning && (mode == "yolo" || (mode == "edit" && is_edit)))
}

/// What a permission option's `response` decides.
pub struct Verdict {
    pub decision: String,
    pub allowed: bool,
    /// The response adds rules ("always allow").
    pub remember: bool,
    /// `modify` decisions may replace the tool input.
    pub input: Option<Value>,
}

impl Verdict {
    /// `declined` (a refused form) denies whatever the response says.
    pub fn of(response: &Value, declined: bool) -> Verdict {
        let decision =
            if declined { "deny" } else { response["decision"].as_str().unwrap_or("deny") };
        let allowed = matches!(decision, "allow" | "modify");
        let remember =
            response["permissionUpdates"].as_array().is_some_and(|updates| !updates.is_empty());
        let input =
            (decision == "modify").then(|| response.get("modifiedInput").cloned()).flatten();
        Verdict { decision: decision.to_owned(), allowed, remember, input }
    }
}

/// A session's title from its first prompt: the first line, whitespace collapsed, at most 60
/// characters.
/// The reply of the `k`th exchange a `big-history` fault seeds (both the app-server's and the
/// Services Server's): "Reply to history message k. " and filler up to about 8 KiB, the size of
/// a real message (48 messages were 414 KB in the live record [B] of issue 25).
pub fn big_history_reply(k: u64) -> String {
    const FILLER: &str = "lorem ipsum dolor sit amet ";
    let mut text = format!("Reply to history message {k}. ");
    while text.len() < 8 * 1024 {
        text.push_str(FILLER);
    }
    text
}

pub fn title_from(text: &str) -> String {
    const TITLE_CHARS: usize = 60;
    let line = text.lines().find(|line| !line.trim().is_empty()).unwrap_or("");
    let flat = line.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.chars().count() {
        0 => "New session".to_owned(),
        count if count > TITLE_CHARS => {
            format!("{}…", flat.chars().take(TITLE_CHARS - 1).collect::<String>())
        }
        _ => flat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summarizes_answers_per_question() {
        let content = json!({"answers": {"Which?": ["a", "b"], "Why?": "c"}});
        assert_eq!(answers_summary(&content), "Which?: a, b\nWhy?: c");
        assert_eq!(answers_summary(&json!({"x": 1})), "{\"x\":1}");
    }

    #[test]
    fn persists_text_content_as_output() {
        assert_eq!(output_text(&json!({"content": "hi", "exitCode": 0})), "hi");
        assert_eq!(output_text(&json!("plain")), "plain");
        assert_eq!(output_text(&json!({"n": 1})), "{\"n\":1}");
    }

    #[test]
    fn estimates_four_characters_per_token() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
    }

    #[test]
    fn modes_approve_edits_or_everything_unless_planning() {
        assert!(auto_approved("edit", false, false, "Write"));
        assert!(!auto_approved("edit", false, false, "Bash"));
        assert!(auto_approved("yolo", false, false, "Bash"));
        assert!(!auto_approved("yolo", true, false, "Bash"));
        assert!(auto_approved("build", true, true, "Bash"));
    }

    #[test]
    fn usage_bills_every_request_for_the_context_and_counts_reasoning_as_output() {
        let counts = TurnCounts {
            context_before: 100,
            prompt_tokens: 10,
            model_requests: 2,
            output_chars: 40,
            reasoning_chars: 20,
        };
        let tokens = counts.tokens(UsageOverride::default());
        let expected =
            TurnTokens { input: 220, output: 15, reasoning: 5, cache_read: 100, cache_write: 10 };
        assert_eq!(tokens, expected);
        let chosen = UsageOverride { output: Some(7), ..UsageOverride::default() };
        assert_eq!(counts.tokens(chosen).output, 7);
        assert_eq!(new_call_id().len(), "call_".len() + 24);
    }

    #[test]
    fn titles_take_the_first_line() {
        assert_eq!(title_from("\n  fix   the bug \nmore"), "fix the bug");
        assert_eq!(title_from(""), "New session");
        assert_eq!(title_from(&"x".repeat(61)).chars().count(), 60);
    }
}
