//! The simulator against traffic recorded from a real Agent (`tests/recorded/app-server`):
//! the same client lines must get answers of the same shape — equal where the recording is
//! complete, equal in every recorded member where it was elided.

mod app_server_support;

use std::collections::BTreeSet;

use app_server_support::{Desktop, Frame};
use serde_json::Value;

fn recording() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/recorded/app-server/z3-probe.ndjson");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Every member of `recorded` is in `actual` with the same value (objects compared member by
/// member, so elided members do not count).
fn assert_contains(actual: &Value, recorded: &Value, at: &str) {
    match recorded {
        Value::Object(members) => {
            for (key, value) in members {
                assert_contains(&actual[key], value, &format!("{at}.{key}"));
            }
        }
        other => assert_eq!(actual, other, "{at}"),
    }
}

fn keys(issue: &Value) -> BTreeSet<String> {
    issue["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_simulator_answers_the_recorded_probe_like_the_real_agent() {
    let desktop = Desktop::new("3.14.4");
    let mut agent = desktop.spawn();
    let lines = recording();
    let (startup, rest) = lines.split_first().unwrap();
    // The start-up frame: same members; the redacted values have their real shapes here.
    let Frame::Json(first) = agent.next_frame() else { panic!("raw first frame") };
    let recorded = &startup["frame"];
    let members = |value: &Value| {
        value["params"].as_object().unwrap().keys().cloned().collect::<BTreeSet<_>>()
    };
    assert_eq!(members(&first), members(recorded));
    for key in ["schemaVersion", "sequence", "databaseKind", "phase", "elapsedMs"] {
        assert_eq!(first["params"][key], recorded["params"][key], "{key}");
    }
    assert_eq!(first["params"]["databaseId"].as_str().unwrap().len(), 64);
    assert_eq!(first["params"]["attemptId"].as_str().unwrap().len(), 36);
    for entry in rest {
        let frame = &entry["frame"];
        if entry["dir"] == "c2s" {
            agent.send(frame);
            continue;
        }
        let answer = agent.take(|value| value.get("method").is_none() && value.get("id").is_some());
        if entry["complete"] == true {
            assert_eq!(answer, *frame, "recorded answer");
        } else {
            assert_contains(&answer, frame, "answer");
        }
        if let Some(branches) = entry["branches"].as_array() {
            let actual = answer["error"]["data"]["issues"][0]["errors"].as_array().unwrap();
            assert_eq!(actual.len(), branches.len(), "one issue list per union branch");
            for (index, recorded) in branches.iter().enumerate() {
                let first = &actual[index][0];
                assert_eq!(first["code"], recorded["code"], "branch {index}");
                assert_eq!(keys(first), keys(recorded), "branch {index}");
                for key in ["expected", "path"] {
                    if let Some(value) = recorded.get(key) {
                        assert_eq!(&first[key], value, "branch {index} {key}");
                    }
                }
            }
        }
    }
}
