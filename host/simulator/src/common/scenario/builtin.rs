//! Built-in scenarios and how a prompt selects one.
//!
//! Selection order: `ZCODE_SIM_SCENARIO` (a scenario file used for every prompt), then a prompt
//! whose first line starts with `sim:<name>`, else the plain streamed reply. The built-ins are
//! written in the scenario language itself, so they go through the same parser as files.

use std::path::Path;

use serde_json::{Value, json};

use super::{Scenario, parse, parse_lines};

/// `sim:<name>` triggers, for docs and error messages.
pub const BUILTIN_NAMES: &[&str] = &[
    "reply",
    "reason",
    "read",
    "edit",
    "shell",
    "question",
    "plan",
    "plan-input",
    "todos",
    "headers",
    "stream",
    "slow",
    "fail",
    "end",
    "fault",
    "file",
];

const DEFAULT_EDIT_PATH: &str = "sim-edit.txt";
const DEFAULT_EDIT_CONTENT: &str = "Edited by the ZCode simulator.\n";
const DEFAULT_STREAM_CHUNKS: u64 = 1000;
const DEFAULT_SLOW_MS: u64 = 60_000;
const PLAN_TEXT: &str =
    "# Proposed plan\n\n1. Read the relevant code\n2. Make the change\n3. Run the tests";

/// Chooses the scenario for one prompt.
pub fn select(
    prompt: &str,
    workspace: &Path,
    scenario_file: Option<&Path>,
) -> Result<Scenario, String> {
    if let Some(path) = scenario_file {
        return load_file(path);
    }
    let first_line = prompt.lines().next().unwrap_or("").trim();
    let Some(trigger) = first_line.strip_prefix("sim:") else {
        return Ok(reply(&format!(
            "Hello from the ZCode simulator. You said: {}",
            excerpt(prompt)
        )));
    };
    let (name, argument) = match trigger.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (trigger, ""),
    };
    let words: Vec<&str> = argument.split_whitespace().collect();
    let scenario = match name {
        "reply" => {
            reply(if argument.is_empty() { "Hello from the ZCode simulator." } else { argument })
        }
        "reason" => reasoning_then_reply(),
        "read" => read_file(words.first().copied().unwrap_or("README.md")),
        "edit" => {
            let path = words.first().copied().unwrap_or(DEFAULT_EDIT_PATH);
            let content = argument
                .split_once(char::is_whitespace)
                .map(|(_, rest)| format!("{}\n", rest.trim()))
                .unwrap_or_else(|| DEFAULT_EDIT_CONTENT.to_owned());
            edit_file(path, &content)
        }
        "shell" => shell(if argument.is_empty() { "ls" } else { argument }),
        "question" => question(),
        "plan" => plan("permission"),
        "plan-input" => plan("user_input"),
        "todos" => todos(),
        "headers" => headers(),
        "stream" => stream(number(&words, DEFAULT_STREAM_CHUNKS)?),
        "slow" => slow(number(&words, DEFAULT_SLOW_MS)?),
        "fail" => fail(if argument.is_empty() { "Simulated model failure" } else { argument }),
        "end" => end(words.first().copied().unwrap_or("success")),
        "fault" => fault(words.first().copied().ok_or("sim:fault needs a fault name")?)?,
        "file" => {
            let relative = words.first().copied().ok_or("sim:file needs a workspace path")?;
            return load_file(&workspace.join(super::workspace_relative(relative)?));
        }
        other => {
            return Err(format!(
                "Unknown simulator scenario: sim:{other} (known: {})",
                BUILTIN_NAMES.join(", ")
            ));
        }
    };
    Ok(scenario)
}

fn load_file(path: &Path) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("Cannot read scenario {}: {error}", path.display()))?;
    parse(&text).map_err(|error| format!("Invalid scenario {}: {error}", path.display()))
}

fn number(words: &[&str], default: u64) -> Result<u64, String> {
    match words.first() {
        None => Ok(default),
        Some(word) => word.parse().map_err(|_| format!("expected a number, got {word:?}")),
    }
}

fn excerpt(prompt: &str) -> String {
    let flat = prompt.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 200 {
        format!("{}…", flat.chars().take(200).collect::<String>())
    } else {
        flat
    }
}

fn build(lines: Vec<Value>) -> Scenario {
    parse_lines(&lines).expect("built-in scenarios are valid")
}

fn reply(text: &str) -> Scenario {
    build(vec![json!({"step": "text", "text": text})])
}

fn reasoning_then_reply() -> Scenario {
    build(vec![
        json!({"step": "reasoning", "chunk_size": 16,
               "text": "The user wants an answer. Let me think it through briefly before replying."}),
        json!({"step": "text", "text": "Here is my answer, after thinking it through."}),
    ])
}

fn read_file(path: &str) -> Scenario {
    build(vec![
        json!({"step": "text", "text": format!("Let me read {path}.")}),
        json!({"step": "tool", "name": "Read", "input": {"file_path": path}, "input_chunks": 2,
               "title": format!("Read {path}"), "read": path}),
        json!({"step": "text", "text": format!("That was {path}.")}),
    ])
}

fn edit_file(path: &str, content: &str) -> Scenario {
    build(vec![
        json!({"step": "text", "text": format!("I will write {path}.")}),
        json!({"step": "tool", "name": "Write", "input": {"file_path": path, "content": content},
               "input_chunks": 3, "title": format!("Write {path}"),
               "permission": {"reason": format!("Write {path}"), "risk": "medium"},
               "write": {"path": path, "content": content}}),
        json!({"step": "session_event", "type": "checkpoint.created", "if": "allowed",
               "payload": {"checkpointId": format!("checkpoint-{path}")}}),
        json!({"step": "text", "if": "allowed", "text": format!("Wrote {path}.")}),
        json!({"step": "text", "if": "denied",
               "text": format!("Permission denied; {path} was not written.")}),
    ])
}

fn shell(command: &str) -> Scenario {
    let output = format!("$ {command}\n(simulated output)\n");
    let progress = |elapsed_ms: u64| {
        json!({"elapsedMs": elapsed_ms, "pid": 4242, "stdoutBytes": output.len(), "stderrBytes": 0,
               "outputBytes": output.len(), "stdoutTail": output, "stderrTail": ""})
    };
    let description = format!("Run {command}");
    build(vec![
        json!({"step": "tool", "name": "Bash", "title": description,
               "input": {"command": command, "description": description},
               "permission": {"reason": description, "risk": "high"},
               "progress": [progress(120), progress(240)],
               "result": {"content": output, "exitCode": 0}}),
        json!({"step": "text", "if": "allowed", "text": "The command finished."}),
        json!({"step": "text", "if": "denied",
               "text": "Permission denied; the command did not run."}),
    ])
}

fn question() -> Scenario {
    let approach = json!({"question": "Which approach should I take?", "header": "Approach",
        "options": [
            {"value": "fast", "label": "Fast", "description": "A small, quick change"},
            {"value": "thorough", "label": "Thorough", "description": "Refactor where needed"}]});
    let checks = json!({"question": "Which checks should run?", "header": "Checks",
        "multiSelect": true,
        "options": [{"value": "tests", "label": "Tests"}, {"value": "lint", "label": "Lint"}]});
    build(vec![
        json!({"step": "question", "prompt": "A few choices before I start.",
               "questions": [approach, checks]}),
        json!({"step": "text", "if": "allowed", "text": "Thanks, I will proceed with your answers."}),
        json!({"step": "text", "if": "denied", "text": "No answers; I will not proceed."}),
    ])
}

fn plan(source: &str) -> Scenario {
    build(vec![
        json!({"step": "text", "text": "I have a plan."}),
        json!({"step": "plan", "source": source, "plan": PLAN_TEXT}),
        json!({"step": "text", "if": "allowed",
               "text": "Plan approved; starting the implementation."}),
        json!({"step": "text", "if": "denied", "text": "Plan rejected; I will keep planning."}),
    ])
}

fn todos() -> Scenario {
    let first = json!([
        {"content": "Read the code", "status": "in_progress", "priority": "high"},
        {"content": "Make the change", "status": "pending", "priority": "medium"},
        {"content": "Run the tests", "status": "pending", "priority": "low"}]);
    let done = json!([
        {"content": "Read the code", "status": "completed", "priority": "high"},
        {"content": "Make the change", "status": "completed", "priority": "medium"},
        {"content": "Run the tests", "status": "in_progress", "priority": "low"}]);
    build(vec![
        json!({"step": "tool", "name": "TodoWrite", "input": {"todos": first},
               "result": {"content": "Todos updated"}}),
        json!({"step": "todos", "todos": first}),
        json!({"step": "text", "text": "Working through the list."}),
        json!({"step": "todos", "todos": done}),
        json!({"step": "text", "text": " Almost done."}),
    ])
}

fn headers() -> Scenario {
    build(vec![
        json!({"step": "provider_headers", "reason": "model-request"}),
        json!({"step": "text", "text": "Provider headers were applied."}),
    ])
}

fn stream(count: u64) -> Scenario {
    build(vec![json!({"step": "stream", "count": count})])
}

fn slow(ms: u64) -> Scenario {
    build(vec![
        json!({"step": "text", "chunks": ["Working on it"]}),
        json!({"step": "sleep", "ms": ms}),
        json!({"step": "text", "text": " … done."}),
    ])
}

fn fail(message: &str) -> Scenario {
    build(vec![
        json!({"step": "text", "text": "Starting."}),
        json!({"step": "fail", "message": message}),
    ])
}

fn end(result_type: &str) -> Scenario {
    build(vec![
        json!({"step": "text", "text": format!("Stopping with {result_type}.")}),
        json!({"step": "end", "result": result_type}),
    ])
}

fn fault(name: &str) -> Result<Scenario, String> {
    parse_lines(&[
        json!({"step": "text", "text": "Before the fault."}),
        json!({"step": "fault", "fault": name}),
        json!({"step": "text", "text": "After the fault."}),
    ])
    .map_err(|error| error.message)
}

#[cfg(test)]
mod tests {
    use super::super::{Action, Condition, Effect, PlanSource};
    use super::*;

    fn pick(prompt: &str) -> Scenario {
        select(prompt, Path::new("/w"), None).unwrap()
    }

    #[test]
    fn plain_prompts_get_the_streamed_reply() {
        let scenario = pick("hello there");
        let Action::Text(chunks) = &scenario.steps[0].action else { panic!("not text") };
        assert_eq!(chunks.concat(), "Hello from the ZCode simulator. You said: hello there");
        assert!(chunks.len() > 1, "the reply is streamed in several chunks");
    }

    #[test]
    fn triggers_select_builtins_with_arguments() {
        let edit = pick("sim:edit notes/a.txt some words");
        let Action::Tool(tool) = &edit.steps[1].action else { panic!("not a tool") };
        assert_eq!(
            tool.effect,
            Some(Effect::Write { path: "notes/a.txt".into(), content: "some words\n".into() })
        );
        assert!(tool.permission.is_some());
        assert_eq!(edit.steps[3].condition, Some(Condition::Allowed));

        assert_eq!(
            pick("sim:stream 5").steps[0].action,
            Action::Stream { count: 5, chunk: "lorem ipsum ".into() }
        );
        assert_eq!(
            pick("sim:slow 10").steps[1].action,
            Action::Sleep(std::time::Duration::from_millis(10))
        );
        assert_eq!(pick("sim:end max_tokens").steps[1].action, Action::End("max_tokens".into()));
        let Action::PlanApproval(plan) = &pick("sim:plan-input").steps[1].action else { panic!() };
        assert_eq!(plan.source, PlanSource::UserInput);
    }

    #[test]
    fn every_builtin_name_is_selectable() {
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join("s.jsonl"), "{\"step\":\"end\"}\n").unwrap();
        for name in BUILTIN_NAMES {
            let argument = match *name {
                "fault" => " seq-gap",
                "file" => " s.jsonl",
                _ => "",
            };
            let prompt = format!("sim:{name}{argument}");
            assert!(select(&prompt, workspace.path(), None).is_ok(), "{prompt}");
        }
    }

    #[test]
    fn rejects_unknown_triggers_bad_numbers_and_escaping_files() {
        assert!(
            select("sim:dance", Path::new("/w"), None)
                .unwrap_err()
                .contains("Unknown simulator scenario")
        );
        assert!(select("sim:stream lots", Path::new("/w"), None).is_err());
        assert!(
            select("sim:file ../x.jsonl", Path::new("/w"), None)
                .unwrap_err()
                .contains("inside the workspace")
        );
        assert!(select("sim:fault late", Path::new("/w"), None).is_err());
    }

    #[test]
    fn a_scenario_file_overrides_every_trigger() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("all.jsonl");
        std::fs::write(&file, "{\"step\":\"fail\",\"message\":\"from file\"}\n").unwrap();
        let scenario = select("sim:reason", dir.path(), Some(&file)).unwrap();
        assert_eq!(scenario.steps[0].action, Action::Fail("from file".into()));
        std::fs::write(&file, "{\"step\":\"bogus\"}\n").unwrap();
        assert!(select("x", dir.path(), Some(&file)).unwrap_err().contains("line 1"));
    }
}
