//! What the simulated Agent keeps on disk: one JSON file per persisted session (the sqlite
//! `session` row plus its messages in the real Agent), under `<state>/app-server/sessions/`.
//!
//! A session reaches the store with its first prompt, never at `session/create` (reference
//! APP §8.1: the row appears when the first `session/send` is processed). Files are replaced
//! atomically, so a later process lists, reads and resumes what an earlier one wrote.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::store::{Record, SessionFiles, state_dir};

/// Token counters of a session, summed over its model requests (`session/usage`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub reasoning_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_creation_tokens: u64,
    pub model_request_count: u64,
    pub model_error_count: u64,
}

impl Usage {
    /// Reasoning is part of the output (`common::turn::TurnTokens`).
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_creation_tokens += other.cache_creation_tokens;
        self.model_request_count += other.model_request_count;
        self.model_error_count += other.model_error_count;
    }
}

/// One session as the Agent persists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    pub session_id: String,
    /// The `ZCodeWorkspaceRef` it was created with (`{workspacePath, workspaceKey, ...}`).
    pub workspace: Value,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title_source: Option<String>,
    pub trace_id: String,
    pub created_at: u64,
    pub updated_at: u64,
    pub mode: String,
    /// The session's `ModelSelection`; `None` is a legal, model-less state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_level: Option<String>,
    #[serde(default)]
    pub messages: Vec<Value>,
    #[serde(default)]
    pub todos: Vec<Value>,
    #[serde(default)]
    pub usage: Usage,
    #[serde(default)]
    pub turn_count: u64,
    #[serde(default)]
    pub context_used: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    /// A workspace checkpoint exists once a turn changed files (needed by `session/fork`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_id: Option<String>,
}

impl SessionRecord {
    pub fn workspace_path(&self) -> &str {
        self.workspace["workspacePath"].as_str().unwrap_or_default()
    }

    /// `workspaceIdentity` when set, else the path: what `session/list` filters on.
    pub fn workspace_identity(&self) -> &str {
        self.workspace["workspaceIdentity"]
            .as_str()
            .filter(|identity| !identity.trim().is_empty())
            .unwrap_or_else(|| self.workspace_path())
    }
}

impl Record for SessionRecord {
    fn session_id(&self) -> &str {
        &self.session_id
    }

    fn updated_at(&self) -> u64 {
        self.updated_at
    }
}

pub struct AppStore {
    root: PathBuf,
    sessions: SessionFiles<SessionRecord>,
}

impl AppStore {
    /// `$ZCODE_SIM_STATE/app-server`, else `<install-root>/.sim-state/app-server`.
    pub fn for_install(install_root: &Path) -> AppStore {
        AppStore::at(state_dir(install_root).join("app-server"))
    }

    pub fn at(root: PathBuf) -> AppStore {
        AppStore { sessions: SessionFiles::at(root.join("sessions")), root }
    }

    /// The id start-up frames give the database: the SHA-256 of its path (storage-startup
    /// source), here of the simulated database file beside the sessions.
    pub fn database_id(&self) -> String {
        use sha2::{Digest, Sha256};
        let path = self.database_path();
        let digest = Sha256::digest(path.to_string_lossy().as_bytes());
        digest.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// Where the simulated database lives (named in start-up frames; no file is written).
    pub fn database_path(&self) -> PathBuf {
        self.root.join("db.sqlite")
    }

    pub fn load(&self, session_id: &str) -> Result<Option<SessionRecord>, String> {
        self.sessions.load(session_id)
    }

    pub fn save(&self, record: &SessionRecord) -> Result<(), String> {
        self.sessions.save(&record.session_id, record)
    }

    pub fn delete(&self, session_id: &str) -> Result<(), String> {
        self.sessions.delete(session_id)
    }

    /// Every stored session, newest first.
    pub fn list(&self) -> Result<Vec<SessionRecord>, String> {
        self.sessions.list()
    }

    /// Appends one line to `<state>/app-server/permissions.jsonl`: the simulator's own record
    /// of each permission it asked (`decision: null`) and what it then decided (`allow` /
    /// `deny`), read by tests to prove what was really allowed. Not part of the Agent's storage.
    pub fn audit_permission(&self, session_id: &str, request_id: &str, decision: Option<&str>) {
        use std::io::Write as _;
        let line = serde_json::json!({"sessionId": session_id, "requestId": request_id,
                                      "decision": decision});
        let written = std::fs::create_dir_all(&self.root).and_then(|()| {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(self.root.join("permissions.jsonl"))?;
            file.write_all(format!("{line}\n").as_bytes())
        });
        if let Err(error) = written {
            eprintln!("zcode-sim: cannot record a permission outcome: {error}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(id: &str, updated_at: u64) -> SessionRecord {
        SessionRecord {
            session_id: id.into(),
            workspace: json!({"workspacePath": "/w", "workspaceKey": "/w"}),
            title: String::new(),
            title_source: None,
            trace_id: "t".into(),
            created_at: 1,
            updated_at,
            mode: "build".into(),
            model: None,
            thought_level: None,
            messages: vec![],
            todos: vec![],
            usage: Usage::default(),
            turn_count: 0,
            context_used: 0,
            parent_session_id: None,
            checkpoint_id: None,
        }
    }

    #[test]
    fn saves_lists_newest_first_and_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let store = AppStore::at(dir.path().to_path_buf());
        store.save(&record("sess_a", 1)).unwrap();
        store.save(&record("sess_b", 2)).unwrap();
        let ids: Vec<String> = store.list().unwrap().into_iter().map(|r| r.session_id).collect();
        assert_eq!(ids, ["sess_b", "sess_a"]);
        store.delete("sess_b").unwrap();
        assert!(store.load("sess_b").unwrap().is_none());
        assert!(store.load("../../etc/passwd").unwrap().is_none());
    }
}
