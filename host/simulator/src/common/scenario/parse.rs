//! Parser for the scenario language: one JSON object per line, `"step"` names the kind.
//! Keys are checked strictly so a typo is an error, not a silently ignored option.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::{
    Action, Condition, Effect, Permission, PlanApproval, PlanSource, Question, Scenario, Step,
    ToolCall, ToolOutcome, UsageOverride,
};
use crate::common::fault::{FaultKind, parse_name};

const DEFAULT_CHUNK_CHARS: usize = 12;
const DEFAULT_STREAM_CHUNK: &str = "lorem ipsum ";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number in the scenario text.
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "line {}: {}", self.line, self.message)
    }
}

/// Parses scenario text. Blank lines and lines starting with `#` or `//` are skipped.
pub fn parse(text: &str) -> Result<Scenario, ParseError> {
    let mut steps = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("//") {
            continue;
        }
        let fail = |message: String| ParseError { line: index + 1, message };
        let value: Value =
            serde_json::from_str(line).map_err(|error| fail(format!("invalid JSON: {error}")))?;
        steps.push(parse_step(&value).map_err(fail)?);
    }
    Ok(Scenario { steps })
}

/// Parses already-decoded step objects (used by the built-in scenarios).
pub fn parse_lines(lines: &[Value]) -> Result<Scenario, ParseError> {
    let mut steps = Vec::new();
    for (index, value) in lines.iter().enumerate() {
        steps.push(parse_step(value).map_err(|message| ParseError { line: index + 1, message })?);
    }
    Ok(Scenario { steps })
}

fn parse_step(value: &Value) -> Result<Step, String> {
    let object = value.as_object().ok_or("a step must be a JSON object")?;
    let fields = Fields::new(object);
    let kind = fields.required_str("step")?;
    let condition = match fields.optional_str("if")? {
        None => None,
        Some("allowed") => Some(Condition::Allowed),
        Some("denied") => Some(Condition::Denied),
        Some(other) => {
            return Err(format!("`if` must be \"allowed\" or \"denied\", not {other:?}"));
        }
    };
    let action = match kind {
        "text" => Action::Text(chunks(&fields)?),
        "reasoning" => Action::Reasoning(chunks(&fields)?),
        "stream" => stream(&fields)?,
        "tool" => Action::Tool(Box::new(tool(&fields)?)),
        "question" => Action::Question(question(&fields)?),
        "plan" => Action::PlanApproval(plan(&fields)?),
        "todos" => Action::Todos(todos(&fields)?),
        "title" => {
            fields.allow(&["title"])?;
            Action::Title(fields.required_str("title")?.to_owned())
        }
        "provider_headers" => {
            fields.allow(&["reason"])?;
            let reason = fields.optional_str("reason")?.unwrap_or("model-request");
            if !matches!(reason, "model-request" | "captcha-retry") {
                return Err(format!("unknown provider header reason {reason:?}"));
            }
            Action::ProviderHeaders { reason: reason.to_owned() }
        }
        "sleep" => {
            fields.allow(&["ms"])?;
            Action::Sleep(Duration::from_millis(fields.required_u64("ms")?))
        }
        "stall" => {
            fields.allow(&[])?;
            Action::Stall
        }
        "event" => {
            fields.allow(&["event"])?;
            let event = fields.required("event")?;
            if event.get("type").and_then(Value::as_str).is_none() {
                return Err("`event` must be an object with a string `type`".into());
            }
            Action::Event(event.clone())
        }
        "session_event" => {
            fields.allow(&["type", "payload"])?;
            let payload = fields.get("payload").cloned().unwrap_or_else(|| json!({}));
            if !payload.is_object() {
                return Err("`payload` must be an object".into());
            }
            Action::SessionEvent { kind: fields.required_str("type")?.to_owned(), payload }
        }
        "usage" => {
            fields.allow(&["input", "output", "reasoning", "cache_read", "cache_creation"])?;
            Action::Usage(UsageOverride {
                input: fields.optional_u64("input")?,
                output: fields.optional_u64("output")?,
                reasoning: fields.optional_u64("reasoning")?,
                cache_read: fields.optional_u64("cache_read")?,
                cache_creation: fields.optional_u64("cache_creation")?,
            })
        }
        "end" => {
            fields.allow(&["result"])?;
            Action::End(fields.optional_str("result")?.unwrap_or("success").to_owned())
        }
        "fail" => {
            fields.allow(&["message"])?;
            Action::Fail(fields.optional_str("message")?.unwrap_or("ZCode turn failed").to_owned())
        }
        "fault" => {
            fields.allow(&["fault"])?;
            let name = fields.required_str("fault")?;
            let fault = parse_name(FaultKind::NAMES, name)?;
            if matches!(fault, FaultKind::Late | FaultKind::Duplicate | FaultKind::SlowStart) {
                return Err(format!(
                    "fault `{}` is about call responses; arm it with ZCODE_SIM_FAULT",
                    name.trim().replace('_', "-")
                ));
            }
            Action::Fault(fault)
        }
        other => return Err(format!("unknown step {other:?}")),
    };
    Ok(Step { condition, action })
}

fn chunks(fields: &Fields) -> Result<Vec<String>, String> {
    fields.allow(&["text", "chunks", "chunk_size"])?;
    match (fields.get("text"), fields.get("chunks")) {
        (Some(_), Some(_)) => Err("give either `text` or `chunks`, not both".into()),
        (Some(_), None) => {
            let size = fields.optional_u64("chunk_size")?.unwrap_or(DEFAULT_CHUNK_CHARS as u64);
            if size == 0 {
                return Err("`chunk_size` must be at least 1".into());
            }
            Ok(split_chars(fields.required_str("text")?, size as usize))
        }
        (None, Some(list)) => {
            if fields.get("chunk_size").is_some() {
                return Err("`chunk_size` only applies to `text`".into());
            }
            let list = list.as_array().ok_or("`chunks` must be an array of strings")?;
            list.iter()
                .map(|chunk| chunk.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| "`chunks` must be an array of strings".into())
        }
        (None, None) => Err("needs `text` or `chunks`".into()),
    }
}

/// Splits `text` into pieces of at most `size` characters (never inside a character).
pub(crate) fn split_chars(text: &str, size: usize) -> Vec<String> {
    let characters: Vec<char> = text.chars().collect();
    characters.chunks(size.max(1)).map(|piece| piece.iter().collect()).collect()
}

fn stream(fields: &Fields) -> Result<Action, String> {
    fields.allow(&["count", "chunk"])?;
    let chunk = fields.optional_str("chunk")?.unwrap_or(DEFAULT_STREAM_CHUNK);
    if chunk.is_empty() {
        return Err("`chunk` must not be empty".into());
    }
    Ok(Action::Stream { count: fields.required_u64("count")?, chunk: chunk.to_owned() })
}

fn tool(fields: &Fields) -> Result<ToolCall, String> {
    fields.allow(&[
        "name",
        "id",
        "input",
        "input_chunks",
        "title",
        "permission",
        "progress",
        "result",
        "error",
        "write",
        "read",
    ])?;
    let name = fields.required_str("name")?.to_owned();
    let input = fields.get("input").cloned().unwrap_or_else(|| json!({}));
    let input_chunks = fields.optional_u64("input_chunks")?.unwrap_or(1).max(1) as usize;
    let permission = match fields.get("permission") {
        None | Some(Value::Bool(false)) => None,
        Some(Value::Bool(true)) => Some(permission(&Map::new(), &name)?),
        Some(Value::Object(object)) => Some(permission(object, &name)?),
        Some(_) => return Err("`permission` must be true or an object".into()),
    };
    let progress = match fields.get("progress") {
        None => Vec::new(),
        Some(Value::Number(count)) => {
            let count = count.as_u64().ok_or("`progress` count must be a non-negative integer")?;
            (1..=count).map(|index| json!({"elapsedMs": index * 100})).collect()
        }
        Some(Value::Array(items)) if items.iter().all(Value::is_object) => items.clone(),
        Some(_) => return Err("`progress` must be a count or an array of objects".into()),
    };
    let outcome = match (fields.get("result"), fields.get("error")) {
        (Some(_), Some(_)) => return Err("give either `result` or `error`, not both".into()),
        (Some(result), None) => ToolOutcome::Result(result.clone()),
        (None, Some(_)) => ToolOutcome::Error(fields.required_str("error")?.to_owned()),
        (None, None) => ToolOutcome::Default,
    };
    let effect = match (fields.get("write"), fields.get("read")) {
        (Some(_), Some(_)) => return Err("give either `write` or `read`, not both".into()),
        (Some(write), None) => {
            let write = write.as_object().ok_or("`write` must be {path, content}")?;
            let write_fields = Fields::new(write);
            write_fields.allow(&["path", "content"])?;
            Some(Effect::Write {
                path: workspace_relative(write_fields.required_str("path")?)?,
                content: write_fields.required_str("content")?.to_owned(),
            })
        }
        (None, Some(_)) => {
            Some(Effect::Read { path: workspace_relative(fields.required_str("read")?)? })
        }
        (None, None) => None,
    };
    Ok(ToolCall {
        name,
        call_id: fields.optional_str("id")?.map(str::to_owned),
        input,
        input_chunks,
        title: fields.optional_str("title")?.map(str::to_owned),
        permission,
        progress,
        outcome,
        effect,
    })
}

/// Effects may only touch files inside the workspace.
pub(crate) fn workspace_relative(path: &str) -> Result<String, String> {
    let candidate = std::path::Path::new(path);
    let escapes = candidate.components().any(|component| {
        !matches!(component, std::path::Component::Normal(_) | std::path::Component::CurDir)
    });
    if path.is_empty() || escapes {
        return Err(format!("path {path:?} must be relative and stay inside the workspace"));
    }
    Ok(path.to_owned())
}

fn permission(object: &Map<String, Value>, tool_name: &str) -> Result<Permission, String> {
    let fields = Fields::new(object);
    fields.allow(&["reason", "risk", "options"])?;
    let risk = fields.optional_str("risk")?.unwrap_or("medium");
    if !matches!(risk, "low" | "medium" | "high" | "critical") {
        return Err(format!("unknown risk level {risk:?}"));
    }
    let options = match fields.get("options") {
        None => default_permission_options(tool_name),
        Some(Value::Array(items)) if !items.is_empty() => {
            items.iter().map(permission_option).collect::<Result<Vec<_>, _>>()?
        }
        Some(_) => return Err("`options` must be a non-empty array".into()),
    };
    Ok(Permission {
        reason: fields.optional_str("reason")?.unwrap_or("").to_owned(),
        risk: risk.to_owned(),
        options,
    })
}

/// Allow once, allow always (with a session rule), deny — the shape ZCode offers for tools.
pub(crate) fn default_permission_options(tool_name: &str) -> Vec<Value> {
    vec![
        json!({"optionId": "allow", "kind": "allow_once", "name": "Allow",
               "response": {"decision": "allow"}}),
        json!({"optionId": "allow-always", "kind": "allow_always", "name": "Always allow",
               "description": format!("Allow {tool_name} for the rest of this session"),
               "response": {"decision": "allow", "permissionUpdates": [
                   {"type": "addRules", "behavior": "allow", "destination": "session",
                    "rules": [{"toolName": tool_name}]}]}}),
        json!({"optionId": "deny", "kind": "reject_once", "name": "Deny",
               "response": {"decision": "deny"}}),
    ]
}

/// Author form `{optionId, name, kind, decision, description?, permissionUpdates?}` to the
/// native `PermissionOption`.
fn permission_option(value: &Value) -> Result<Value, String> {
    let object = value.as_object().ok_or("each permission option must be an object")?;
    let fields = Fields::new(object);
    fields.allow(&[
        "optionId",
        "name",
        "kind",
        "decision",
        "description",
        "permissionUpdates",
        "modifiedInput",
    ])?;
    let decision = fields.required_str("decision")?;
    if !matches!(decision, "allow" | "deny" | "escalate" | "modify") {
        return Err(format!("unknown permission decision {decision:?}"));
    }
    let mut response = json!({"decision": decision});
    for key in ["permissionUpdates", "modifiedInput"] {
        if let Some(value) = fields.get(key) {
            response[key] = value.clone();
        }
    }
    let mut option = json!({
        "optionId": fields.required_str("optionId")?,
        "kind": fields.optional_str("kind")?.unwrap_or(if decision == "deny" {
            "reject_once"
        } else {
            "allow_once"
        }),
        "name": fields.required_str("name")?,
        "response": response,
    });
    if let Some(description) = fields.optional_str("description")? {
        option["description"] = json!(description);
    }
    Ok(option)
}

fn question(fields: &Fields) -> Result<Question, String> {
    fields.allow(&["id", "prompt", "questions"])?;
    let questions = fields
        .required("questions")?
        .as_array()
        .filter(|list| !list.is_empty())
        .ok_or("`questions` must be a non-empty array")?;
    for item in questions {
        let object = item.as_object().ok_or("each question must be an object")?;
        let question = Fields::new(object);
        question.allow(&["question", "header", "options", "multiSelect"])?;
        for key in ["question", "header"] {
            if question.required_str(key)?.is_empty() {
                return Err(format!("question `{key}` must not be empty"));
            }
        }
        let options =
            question.required("options")?.as_array().ok_or("`options` must be an array")?;
        for option in options {
            let option = option.as_object().ok_or("each option must be an object")?;
            let option = Fields::new(option);
            option.allow(&["value", "label", "description", "preview"])?;
            option.required_str("value")?;
            option.required_str("label")?;
        }
        if question.get("multiSelect").is_some_and(|flag| !flag.is_boolean()) {
            return Err("`multiSelect` must be a boolean".into());
        }
    }
    Ok(Question {
        call_id: fields.optional_str("id")?.map(str::to_owned),
        prompt: fields.optional_str("prompt")?.map(str::to_owned),
        questions: questions.clone(),
    })
}

fn plan(fields: &Fields) -> Result<PlanApproval, String> {
    fields.allow(&["source", "plan", "reason"])?;
    let source = match fields.optional_str("source")?.unwrap_or("permission") {
        "permission" => PlanSource::Permission,
        "user_input" => PlanSource::UserInput,
        other => {
            return Err(format!("plan `source` must be permission or user_input, not {other:?}"));
        }
    };
    Ok(PlanApproval {
        source,
        plan: fields.required_str("plan")?.to_owned(),
        reason: fields.optional_str("reason")?.unwrap_or("Approve the plan").to_owned(),
    })
}

fn todos(fields: &Fields) -> Result<Vec<Value>, String> {
    fields.allow(&["todos"])?;
    let list = fields.required("todos")?.as_array().ok_or("`todos` must be an array")?;
    for item in list {
        let object = item.as_object().ok_or("each todo must be an object")?;
        let todo = Fields::new(object);
        todo.allow(&["content", "status", "priority"])?;
        todo.required_str("content")?;
        let status = todo.required_str("status")?;
        if !matches!(status, "pending" | "in_progress" | "completed") {
            return Err(format!("unknown todo status {status:?}"));
        }
        let priority = todo.required_str("priority")?;
        if !matches!(priority, "high" | "medium" | "low") {
            return Err(format!("unknown todo priority {priority:?}"));
        }
    }
    Ok(list.clone())
}

/// Typed, strict access to a step object's keys.
struct Fields<'a> {
    object: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    fn new(object: &'a Map<String, Value>) -> Self {
        Fields { object }
    }

    /// Fails on any key besides `step`, `if` and the `allowed` ones.
    fn allow(&self, allowed: &[&str]) -> Result<(), String> {
        match self
            .object
            .keys()
            .find(|key| !allowed.contains(&key.as_str()) && *key != "step" && *key != "if")
        {
            Some(key) => Err(format!("unknown key {key:?}")),
            None => Ok(()),
        }
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.object.get(key)
    }

    fn required(&self, key: &str) -> Result<&'a Value, String> {
        self.get(key).ok_or_else(|| format!("missing `{key}`"))
    }

    fn required_str(&self, key: &str) -> Result<&'a str, String> {
        self.optional_str(key)?.ok_or_else(|| format!("missing `{key}`"))
    }

    fn optional_str(&self, key: &str) -> Result<Option<&'a str>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(_) => Err(format!("`{key}` must be a string")),
        }
    }

    fn required_u64(&self, key: &str) -> Result<u64, String> {
        self.optional_u64(key)?.ok_or_else(|| format!("missing `{key}`"))
    }

    fn optional_u64(&self, key: &str) -> Result<Option<u64>, String> {
        match self.get(key) {
            None => Ok(None),
            Some(value) => value
                .as_u64()
                .map(Some)
                .ok_or_else(|| format!("`{key}` must be a non-negative integer")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Action {
        parse(line).unwrap().steps.remove(0).action
    }

    fn error(text: &str) -> ParseError {
        parse(text).unwrap_err()
    }

    #[test]
    fn skips_comments_and_blank_lines() {
        let scenario =
            parse("# a comment\n\n// another\n{\"step\":\"text\",\"chunks\":[\"a\"]}\n").unwrap();
        assert_eq!(scenario.steps.len(), 1);
    }

    #[test]
    fn splits_text_by_characters() {
        assert_eq!(
            one(r#"{"step":"text","text":"héllo wörld","chunk_size":4}"#),
            Action::Text(vec!["héll".into(), "o wö".into(), "rld".into()])
        );
        assert_eq!(
            one(r#"{"step":"reasoning","chunks":["x","y"]}"#),
            Action::Reasoning(vec!["x".into(), "y".into()])
        );
    }

    #[test]
    fn reports_the_line_of_an_error() {
        let failure = error("{\"step\":\"text\",\"text\":\"ok\"}\n{\"step\":\"dance\"}");
        assert_eq!(failure.line, 2);
        assert!(failure.message.contains("unknown step"), "{failure}");
        assert_eq!(error("not json").line, 1);
        assert!(error(r#"{"step":"text","txt":"typo"}"#).message.contains("unknown key"));
        assert!(error(r#"{"step":"text","text":"a","chunks":["b"]}"#).message.contains("either"));
    }

    #[test]
    fn parses_a_tool_with_permission_effect_and_progress() {
        let Action::Tool(tool) =
            one(r#"{"step":"tool","name":"Write","input":{"file_path":"a.txt"},"input_chunks":3,
               "permission":{"reason":"Write a.txt","risk":"high"},"progress":2,
               "write":{"path":"dir/a.txt","content":"hi"}}"#
                .replace('\n', "")
                .as_str())
        else {
            panic!("not a tool");
        };
        assert_eq!(tool.name, "Write");
        assert_eq!(tool.input_chunks, 3);
        assert_eq!(tool.progress.len(), 2);
        let permission = tool.permission.unwrap();
        assert_eq!(permission.risk, "high");
        assert_eq!(permission.options.len(), 3);
        assert_eq!(permission.options[2]["response"]["decision"], "deny");
        assert_eq!(
            tool.effect,
            Some(Effect::Write { path: "dir/a.txt".into(), content: "hi".into() })
        );
        assert_eq!(tool.outcome, ToolOutcome::Default);
    }

    #[test]
    fn builds_native_permission_options_from_the_author_form() {
        let Action::Tool(tool) = one(
            r#"{"step":"tool","name":"Bash","permission":{"options":[{"optionId":"ok","name":"OK","decision":"allow"},{"optionId":"esc","name":"Ask admin","decision":"escalate","kind":"escalate"}]},"result":{"content":"done"}}"#,
        ) else {
            panic!("not a tool");
        };
        let options = tool.permission.unwrap().options;
        assert_eq!(
            options[0],
            json!({"optionId":"ok","kind":"allow_once","name":"OK","response":{"decision":"allow"}})
        );
        assert_eq!(options[1]["response"]["decision"], "escalate");
        assert_eq!(tool.outcome, ToolOutcome::Result(json!({"content":"done"})));
    }

    #[test]
    fn keeps_effects_inside_the_workspace() {
        for path in ["/etc/passwd", "../outside", "a/../../b", ""] {
            let line = json!({"step":"tool","name":"Read","read":path}).to_string();
            assert!(error(&line).message.contains("inside the workspace"), "{path}");
        }
    }

    #[test]
    fn validates_questions_plans_and_todos() {
        let Action::Question(question) = one(
            r#"{"step":"question","prompt":"Pick","questions":[{"question":"Q?","header":"H","options":[{"value":"a","label":"A"}],"multiSelect":true}]}"#,
        ) else {
            panic!("not a question");
        };
        assert_eq!(question.questions.len(), 1);
        assert!(error(r#"{"step":"question","questions":[]}"#).message.contains("non-empty"));
        assert!(
            error(r#"{"step":"question","questions":[{"question":"","header":"H","options":[]}]}"#)
                .message
                .contains("must not be empty")
        );
        assert_eq!(
            one(r##"{"step":"plan","source":"user_input","plan":"# P"}"##),
            Action::PlanApproval(PlanApproval {
                source: PlanSource::UserInput,
                plan: "# P".into(),
                reason: "Approve the plan".into()
            })
        );
        assert!(error(r#"{"step":"plan","source":"fax","plan":"p"}"#).message.contains("source"));
        assert!(
            error(
                r#"{"step":"todos","todos":[{"content":"x","status":"done","priority":"high"}]}"#
            )
            .message
            .contains("status")
        );
    }

    #[test]
    fn parses_control_steps_and_conditions() {
        let scenario = parse(
            "{\"step\":\"sleep\",\"ms\":5}\n{\"step\":\"stall\"}\n{\"step\":\"end\",\"result\":\"refusal\"}\n\
             {\"step\":\"fail\"}\n{\"step\":\"fault\",\"fault\":\"invalid_utf8\"}\n\
             {\"step\":\"text\",\"if\":\"denied\",\"text\":\"no\"}\n{\"step\":\"stream\",\"count\":3}",
        )
        .unwrap();
        let actions: Vec<&Action> = scenario.steps.iter().map(|step| &step.action).collect();
        assert_eq!(actions[0], &Action::Sleep(Duration::from_millis(5)));
        assert_eq!(actions[1], &Action::Stall);
        assert_eq!(actions[2], &Action::End("refusal".into()));
        assert_eq!(actions[3], &Action::Fail("ZCode turn failed".into()));
        assert_eq!(actions[4], &Action::Fault(FaultKind::InvalidUtf8));
        assert_eq!(scenario.steps[5].condition, Some(Condition::Denied));
        assert_eq!(actions[6], &Action::Stream { count: 3, chunk: DEFAULT_STREAM_CHUNK.into() });
        assert!(error(r#"{"step":"fault","fault":"late"}"#).message.contains("ZCODE_SIM_FAULT"));
        assert!(error(r#"{"step":"text","if":"maybe","text":"x"}"#).message.contains("`if`"));
    }

    #[test]
    fn parses_raw_events_usage_and_headers() {
        assert_eq!(
            one(r#"{"step":"session_event","type":"checkpoint.created"}"#),
            Action::SessionEvent { kind: "checkpoint.created".into(), payload: json!({}) }
        );
        assert!(error(r#"{"step":"event","event":{"no":"type"}}"#).message.contains("type"));
        assert_eq!(
            one(r#"{"step":"usage","input":10,"output":4}"#),
            Action::Usage(UsageOverride { input: Some(10), output: Some(4), ..Default::default() })
        );
        assert_eq!(
            one(r#"{"step":"provider_headers"}"#),
            Action::ProviderHeaders { reason: "model-request".into() }
        );
        assert!(error(r#"{"step":"provider_headers","reason":"whim"}"#).message.contains("reason"));
    }
}
