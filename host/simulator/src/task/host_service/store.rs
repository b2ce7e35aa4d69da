//! Persistent simulator state: one JSON file per session plus per-workspace preferences, so a
//! later host process can list, read and resume what an earlier one created.
//!
//! Layout under the state directory: `sessions/<sessionId>.json`, `workspaces.json`.
//! Files are replaced atomically (write to a temporary file, then rename).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common::store::{Record, SessionFiles, state_dir, write_atomically};

/// How many recent session events a session keeps for `readSessionEvents`.
pub const RECENT_EVENTS: usize = 500;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub reasoning_tokens: u64,
    pub cache_creation_tokens: u64,
    pub cache_read_tokens: u64,
}

impl TokenUsage {
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.reasoning_tokens
    }

    pub fn add(&mut self, other: &TokenUsage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.cache_creation_tokens += other.cache_creation_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
    }
}

/// Everything the host remembers about one session.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredSession {
    pub session_id: String,
    pub workspace_path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub created_at: u64,
    pub updated_at: u64,
    pub mode: String,
    pub model: Value,
    pub thought_level: String,
    #[serde(default)]
    pub messages: Vec<Value>,
    #[serde(default)]
    pub todos: Vec<Value>,
    #[serde(default)]
    pub usage: TokenUsage,
    /// Tokens currently in the context window (`runtime.contextUsage.used`).
    #[serde(default)]
    pub context_used: u64,
    /// Last `seq` handed out, so sequence numbers keep growing across host processes.
    #[serde(default)]
    pub last_seq: u64,
    /// Tools the user allowed for the rest of the session ("always allow").
    #[serde(default)]
    pub always_allowed: BTreeSet<String>,
    #[serde(default)]
    pub mcp_servers: Value,
    #[serde(default)]
    pub recent_events: VecDeque<Value>,
    /// Planning is on beside the editing mode (releases with an independent plan flag).
    #[serde(default, skip_serializing_if = "is_false")]
    pub plan_enabled: bool,
}

fn is_false(flag: &bool) -> bool {
    !*flag
}

impl Record for StoredSession {
    fn session_id(&self) -> &str {
        &self.session_id
    }

    fn updated_at(&self) -> u64 {
        self.updated_at
    }
}

/// Last-used choices per workspace (`persistAsWorkspaceLastUsed`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorkspacePrefs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_level: Option<String>,
}

pub struct Store {
    root: PathBuf,
    sessions: SessionFiles<StoredSession>,
}

impl Store {
    /// `$ZCODE_SIM_STATE` if set, else `<install-root>/.sim-state`.
    pub fn for_install(install_root: &Path) -> Store {
        Store::at(state_dir(install_root))
    }

    pub fn at(root: PathBuf) -> Store {
        Store { sessions: SessionFiles::at(root.join("sessions")), root }
    }

    pub fn load_session(&self, session_id: &str) -> Result<Option<StoredSession>, String> {
        self.sessions.load(session_id)
    }

    pub fn save_session(&self, session: &StoredSession) -> Result<(), String> {
        self.sessions.save(&session.session_id, session)
    }

    /// Every stored session of `workspace_path`, newest first.
    pub fn list_sessions(&self, workspace_path: &str) -> Result<Vec<StoredSession>, String> {
        let all = self.sessions.list()?.into_iter();
        Ok(all.filter(|session| session.workspace_path == workspace_path).collect())
    }

    pub fn workspace_prefs(&self, workspace_path: &str) -> WorkspacePrefs {
        self.all_prefs().remove(workspace_path).unwrap_or_default()
    }

    pub fn save_workspace_prefs(
        &self,
        workspace_path: &str,
        prefs: WorkspacePrefs,
    ) -> Result<(), String> {
        let mut all = self.all_prefs();
        all.insert(workspace_path.to_owned(), prefs);
        let bytes = serde_json::to_vec_pretty(&all).map_err(|error| error.to_string())?;
        write_atomically(&self.root.join("workspaces.json"), &bytes)
    }

    fn all_prefs(&self) -> BTreeMap<String, WorkspacePrefs> {
        std::fs::read_to_string(self.root.join("workspaces.json"))
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn session(id: &str, workspace: &str, updated_at: u64) -> StoredSession {
        StoredSession {
            session_id: id.into(),
            workspace_path: workspace.into(),
            title: None,
            created_at: 1,
            updated_at,
            mode: "build".into(),
            model: json!({}),
            thought_level: "low".into(),
            messages: vec![],
            todos: vec![],
            usage: TokenUsage::default(),
            context_used: 0,
            last_seq: 0,
            always_allowed: BTreeSet::new(),
            mcp_servers: Value::Null,
            recent_events: VecDeque::new(),
            plan_enabled: false,
        }
    }

    #[test]
    fn saves_lists_and_reloads_sessions_per_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path().to_path_buf());
        store.save_session(&session("a", "/w1", 5)).unwrap();
        store.save_session(&session("b", "/w1", 9)).unwrap();
        store.save_session(&session("c", "/w2", 7)).unwrap();
        let listed: Vec<String> =
            store.list_sessions("/w1").unwrap().into_iter().map(|s| s.session_id).collect();
        assert_eq!(listed, ["b", "a"]);
        assert_eq!(store.load_session("c").unwrap().unwrap().workspace_path, "/w2");
        assert!(store.load_session("missing").unwrap().is_none());
    }

    #[test]
    fn remembers_workspace_preferences() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path().to_path_buf());
        assert_eq!(store.workspace_prefs("/w"), WorkspacePrefs::default());
        let prefs = WorkspacePrefs { model: Some(json!({"m": 1})), thought_level: None };
        store.save_workspace_prefs("/w", prefs.clone()).unwrap();
        assert_eq!(store.workspace_prefs("/w"), prefs);
    }
}
