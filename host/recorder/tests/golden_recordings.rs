//! The mapper's own golden traces, driven through a recording of the native mapper: the
//! recorder must pass every result through unchanged, and what it writes must replay green
//! against the same mapper — redacted or not — without the traces' content when redacted.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use zcode_golden as golden;
use zcode_recorder::{Recorder, Redaction};
use zcode_task_v1::TaskV1Mapper;

fn traces() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../mappers/zcode-task-v1/traces");
    let mut paths: Vec<PathBuf> = fs::read_dir(&dir)
        .expect("the mapper's traces")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 12, "expected the mapper's full trace set");
    paths
        .into_iter()
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, fs::read_to_string(&path).expect("trace"))
        })
        .collect()
}

/// Drives `trace` through a recording of the native mapper; returns the recording's text.
fn record(trace: &str, redaction: Redaction) -> (String, Recorder) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("recording.jsonl");
    let recorder = Recorder::create(&path, redaction).expect("create the recording");
    let wrapped = recorder.wrap(Arc::new(TaskV1Mapper));
    // The wrapper is transparent: the original trace still passes through it.
    let report = golden::replay(wrapped.as_ref(), trace);
    assert!(report.passed(), "the recorder changed a result:\n{}", report.render());
    (fs::read_to_string(&path).expect("read the recording"), recorder)
}

/// String values of the trace's inputs that are content: prompt and message text, tool input
/// and output, paths.
fn content_strings(trace: &str) -> Vec<String> {
    fn walk(value: &Value, key: &str, out: &mut Vec<String>) {
        match value {
            Value::String(text) => {
                let content = [
                    "text",
                    "delta",
                    "content",
                    "command",
                    "file_path",
                    "cwd",
                    "workspace",
                    "workspacePath",
                    "title",
                    "plan",
                    "new_string",
                    "old_string",
                    "message",
                ];
                if content.contains(&key) && text.len() >= 6 {
                    out.push(text.clone());
                }
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, key, out)),
            Value::Object(map) => map.iter().for_each(|(k, v)| walk(v, k, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for line in trace.lines().filter(|l| l.starts_with('{')) {
        let mut value: Value = serde_json::from_str(line).expect("trace line");
        if let Some(map) = value.as_object_mut() {
            map.remove("expect");
        }
        walk(&value, "", &mut out);
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn redacted_recordings_replay_green_without_the_content() {
    let mut checked_content = 0;
    for (name, trace) in traces() {
        let (recording, recorder) = record(&trace, Redaction::Redacted);
        let report = golden::replay(&TaskV1Mapper, &recording);
        assert!(report.passed(), "{name}: the recording does not replay:\n{}", report.render());
        assert!(report.matched > 0, "{name}: the recording checks nothing");
        let content = content_strings(&trace);
        for text in &content {
            assert!(!recording.contains(text.as_str()), "{name}: `{text}` leaked:\n{recording}");
        }
        checked_content += content.len();
        println!(
            "{name}: {} lines match, {} redaction notes",
            report.matched,
            recorder.divergences()
        );
    }
    assert!(checked_content > 50, "the content check found too little to check");
}

#[test]
fn unredacted_recordings_replay_green_with_the_content() {
    for (name, trace) in traces() {
        let (recording, recorder) = record(&trace, Redaction::Unredacted);
        let report = golden::replay(&TaskV1Mapper, &recording);
        assert!(report.passed(), "{name}: the recording does not replay:\n{}", report.render());
        assert_eq!(recorder.divergences(), 0);
        // Every result-producing call of the original has an expectation in the recording.
        let calls = trace.lines().filter(|l| l.starts_with('{')).count();
        let creations =
            trace.matches("\"connection.new\"").count() + trace.matches("\"session.new\"").count();
        assert!(report.matched >= calls - creations, "{name}: {} of {calls}", report.matched);
        let content = content_strings(&trace);
        assert!(
            content.is_empty() || content.iter().any(|text| recording.contains(text.as_str())),
            "{name}: an unredacted recording keeps the content"
        );
    }
}

#[test]
fn a_recording_is_owner_only_and_names_its_mapper() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.jsonl");
    fs::write(&path, "old content\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    }
    let recorder = Recorder::create(&path, Redaction::Redacted).unwrap();
    recorder.wrap(Arc::new(TaskV1Mapper));
    let text = fs::read_to_string(&path).unwrap();
    assert!(!text.contains("old content"), "an existing file is truncated");
    assert!(text.contains("# mapper: native:zcode-task-v1\n"), "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}

#[test]
fn bad_settings_fail_clearly() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.into())
    };
    let relative = Recorder::from_env_with(env(&[("ZCODE_ACP_RECORD", "rec.jsonl")]));
    assert_eq!(
        relative.err().unwrap().to_string(),
        "ZCODE_ACP_RECORD must be an absolute path, got `rec.jsonl`"
    );
    let missing = Recorder::from_env_with(env(&[("ZCODE_ACP_RECORD", "/nonexistent-dir/r.jsonl")]));
    let message = missing.err().unwrap().to_string();
    assert!(
        message.starts_with("cannot create the recording /nonexistent-dir/r.jsonl: "),
        "{message}"
    );
    let flag = Recorder::from_env_with(env(&[
        ("ZCODE_ACP_RECORD", "/tmp/x.jsonl"),
        ("ZCODE_ACP_RECORD_UNREDACTED", "yes"),
    ]));
    assert_eq!(
        flag.err().unwrap().to_string(),
        "ZCODE_ACP_RECORD_UNREDACTED must be 1 or 0, got `yes`"
    );
    assert!(Recorder::from_env_with(env(&[])).unwrap().is_none());
    assert!(Recorder::from_env_with(env(&[("ZCODE_ACP_RECORD", "")])).unwrap().is_none());
}
