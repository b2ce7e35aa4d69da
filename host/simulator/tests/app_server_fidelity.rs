//! What real app-servers were seen doing, per the two public records of issue 25: [A] the
//! "ZCode app-server Session Protocol" probe log (CLI 0.16.x, 2026-08-14) and [B] "ZCode
//! Protocol v1 (app-server stdio): live verification record" (Desktop 3.12.3 / CLI 0.16.5,
//! 2026-09). Run once per CLI family.

mod app_server_support;

use app_server_support::{CLI_FAMILIES, Desktop, labels, streamed_text};
use serde_json::json;

/// A new session's log is empty: the snapshot says `eventSeq: 0`, a subscribe answers
/// `{eventSeq: 0, events: [], sessionId}` ([A] §2.4, §5.2, §11.2), the first turn's first
/// event is `seq` 1 and its `turn.started` says `turnNumber: 0` ([A] §7.2, §11.4).
#[test]
fn a_new_session_starts_at_event_zero_and_turn_zero() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        let created = agent.ok("session/create", json!({"workspace": desktop.ws()}));
        assert_eq!(created["runtime"]["eventSeq"], 0, "{app}");
        let session = created["session"]["sessionId"].as_str().unwrap().to_owned();
        let subscribed = agent.ok(
            "session/subscribe",
            json!({"sessionId": session, "deliveryKind": "desktop-continuous"}),
        );
        assert_eq!(subscribed, json!({"eventSeq": 0, "events": [], "sessionId": session}), "{app}");
        agent.prompt(&session, "sim:reply ok");
        let events = agent.turn_events(&session);
        assert_eq!(events[0]["seq"], 1, "{app}: {:?}", labels(&events));
        let started = events.iter().find(|e| e["type"] == "turn.started").unwrap();
        assert_eq!(started["payload"]["turnNumber"], 0, "{app}");
        agent.prompt(&session, "sim:reply again");
        let events = agent.turn_events(&session);
        let started = events.iter().find(|e| e["type"] == "turn.started").unwrap();
        assert_eq!(started["payload"]["turnNumber"], 1, "{app}");
    }
}

/// The last chunk of a streamed segment says `done: true`, the others `done: false` ([A]
/// §7.2; [B] Q1); the text is all the chunks, the last one's included.
#[test]
fn the_last_streamed_chunk_says_done() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        let session = agent.session(&desktop.ws(), json!({}));
        agent.prompt(&session, "sim:reply One two three four five six seven.");
        let events = agent.turn_events(&session);
        let chunks: Vec<_> =
            events.iter().filter(|e| e["payload"]["kind"] == "text_delta").collect();
        assert!(chunks.len() > 1, "{app}: several chunks");
        let (last, rest) = chunks.split_last().unwrap();
        assert_eq!(last["payload"]["done"], true, "{app}");
        assert!(rest.iter().all(|c| c["payload"]["done"] == false), "{app}");
        assert_eq!(streamed_text(&events), "One two three four five six seven.", "{app}");
    }
}

/// `session/resume {sessionId}` without a workspace resumes on 0.16.x too ([B]: "resume
/// {sessionId} activates the session"; [A] §3.1: `workspace?`).
#[test]
fn resume_without_a_workspace_is_accepted_on_every_cli() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        let session = agent.session(&desktop.ws(), json!({}));
        agent.prompt(&session, "sim:reply stored");
        agent.turn_events(&session);
        agent.close_stdin();
        agent.wait();
        let mut later = desktop.spawn();
        let resumed = later.ok("session/resume", json!({"sessionId": session}));
        assert_eq!(resumed["session"]["sessionId"], session.as_str(), "{app}");
        assert_eq!(resumed["messages"].as_array().unwrap().len(), 2, "{app}");
    }
}

/// The allow-for-project option names the Bash command as its rule's `ruleContent` ([B],
/// tool turn, options).
#[test]
fn the_allow_for_project_option_carries_the_command_as_rule_content() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        let session = agent.session(&desktop.ws(), json!({"mode": "build"}));
        agent.prompt(&session, "sim:shell printf 'A' > probe-a.txt");
        let asked = agent.reverse("interaction/requestPermission");
        let project = &asked["params"]["options"][1];
        assert_eq!(project["optionId"], "allow_project", "{app}");
        assert_eq!(
            project["response"]["permissionUpdates"],
            json!([{"behavior": "allow", "type": "addRules",
                    "rules": [{"ruleContent": "printf 'A' > probe-a.txt", "toolName": "Bash"}]}]),
            "{app}"
        );
        agent.answer(&asked["id"], json!({"decision": "deny", "reason": "no"}));
        agent.turn_events(&session);
    }
}

/// An answer that fails the permission schema, and an error answer, are denied silently: the
/// resolution says "Permission request failed" and no validation text is written anywhere
/// ([B], malformed-answer experiments: `{}`, `{"approved":"yes"}`, an error frame).
#[test]
fn a_malformed_permission_answer_is_denied_silently() {
    for app in CLI_FAMILIES {
        let desktop = Desktop::new(app);
        let mut agent = desktop.spawn();
        let session = agent.session(&desktop.ws(), json!({"mode": "build"}));
        for answer in [Some(json!({})), Some(json!({"approved": "yes"})), None] {
            let before = agent.log.len();
            agent.prompt(&session, "sim:shell printf 'B' > probe-b.txt");
            let asked = agent.reverse("interaction/requestPermission");
            match &answer {
                Some(result) => agent.answer(&asked["id"], result.clone()),
                None => agent.answer_error(&asked["id"], -32000, "refused by the host"),
            }
            let events = agent.turn_events(&session);
            let resolved = events.iter().find(|e| e["type"] == "permission.resolved").unwrap();
            assert_eq!(resolved["payload"]["decision"], "deny", "{app} {answer:?}");
            assert_eq!(resolved["payload"]["reason"], "Permission request failed", "{app}");
            let error = events.iter().find(|e| e["payload"]["kind"] == "error").unwrap();
            assert_eq!(error["payload"]["error"]["message"], "Permission request failed", "{app}");
            let written: String =
                agent.log[before..].iter().map(|frame| frame.to_string()).collect();
            for echo in ["ZodError", "invalid_type", "Invalid input", "refused by the host"] {
                assert!(!written.contains(echo), "{app} {answer:?}: {echo} echoed");
            }
            assert!(!desktop.workspace.join("probe-b.txt").exists(), "{app}: never ran");
        }
        agent.close_stdin();
        agent.wait();
        assert!(!agent.stderr_text().contains("ZodError"), "{app}: nothing on stderr either");
    }
}
