//! Persisted V4 conversations: `services/sessions/<sessionId>.json` under the state directory
//! (`$ZCODE_SIM_STATE`, else `<root>/.sim-state`), replaced atomically, so a later server
//! process lists and resumes what an earlier one created. The queue and pending interactions
//! are not saved: they die with the process, as ZCode's do.

use std::path::{Path, PathBuf};

use super::v4::conversation::StoredConversation;
use crate::task::host_service::store::write_atomically;

pub struct ConversationStore {
    dir: PathBuf,
}

impl ConversationStore {
    pub fn for_root(root: &Path) -> ConversationStore {
        let state = std::env::var_os("ZCODE_SIM_STATE")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join(".sim-state"));
        ConversationStore { dir: state.join("services/sessions") }
    }

    #[cfg(test)]
    pub fn at(dir: PathBuf) -> ConversationStore {
        ConversationStore { dir }
    }

    fn file(&self, session_id: &str) -> Option<PathBuf> {
        // Session ids come from clients; only our own id alphabet may reach the filesystem.
        let safe = !session_id.is_empty()
            && session_id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        safe.then(|| self.dir.join(format!("{session_id}.json")))
    }

    /// The `setting` channel's file (`services/setting.json`).
    pub fn settings_path(&self) -> PathBuf {
        self.dir
            .parent()
            .map_or_else(|| self.dir.join("setting.json"), |parent| parent.join("setting.json"))
    }

    pub fn load(&self, session_id: &str) -> Result<Option<StoredConversation>, String> {
        let Some(path) = self.file(session_id) else { return Ok(None) };
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|error| format!("corrupt session file {}: {error}", path.display())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(format!("cannot read {}: {error}", path.display())),
        }
    }

    pub fn save(&self, record: &StoredConversation) -> Result<(), String> {
        let path = self
            .file(&record.session_id)
            .ok_or_else(|| format!("invalid session id {}", record.session_id))?;
        let bytes = serde_json::to_vec(record).map_err(|error| error.to_string())?;
        write_atomically(&path, &bytes)
    }

    /// The saved sessions of a workspace, newest first.
    pub fn list(&self, workspace_path: &str) -> Result<Vec<StoredConversation>, String> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(format!("cannot list sessions: {error}")),
        };
        let mut sessions = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|name| name.strip_suffix(".json")) else {
                continue;
            };
            if let Some(session) = self.load(id)?
                && session.workspace_path == workspace_path
            {
                sessions.push(session);
            }
        }
        sessions.sort_by(|a, b| {
            b.updated_at.cmp(&a.updated_at).then_with(|| a.session_id.cmp(&b.session_id))
        });
        Ok(sessions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::v4::conversation::{Config, Cumulative};

    fn record(id: &str, workspace: &str, updated_at: u64) -> StoredConversation {
        StoredConversation {
            session_id: id.into(),
            workspace_path: workspace.into(),
            created_at: 1,
            updated_at,
            title: String::new(),
            title_source: "default".into(),
            log_epoch: "epoch".into(),
            seq: 0,
            revision: 0,
            next_row_id: 1,
            rows: Vec::new(),
            config: Config {
                provider_id: "p".into(),
                model_id: "m".into(),
                thought: "high".into(),
                mode: "build".into(),
                plan_enabled: false,
                followup_mode: "queue".into(),
            },
            usage: Cumulative::default(),
            context_used: 0,
            phase: "draft".into(),
            last_error: serde_json::Value::Null,
            plan: serde_json::Value::Null,
            always_allowed: Default::default(),
            mcp_servers: serde_json::Value::Null,
            permissions: Vec::new(),
        }
    }

    #[test]
    fn lists_a_workspace_newest_first_and_never_escapes_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let store = ConversationStore::at(dir.path().join("sessions"));
        store.save(&record("sess_a", "/w", 5)).unwrap();
        store.save(&record("sess_b", "/w", 9)).unwrap();
        store.save(&record("sess_c", "/other", 7)).unwrap();
        let listed: Vec<String> =
            store.list("/w").unwrap().into_iter().map(|r| r.session_id).collect();
        assert_eq!(listed, ["sess_b", "sess_a"]);
        assert!(store.load("../../etc/passwd").unwrap().is_none());
        assert!(store.save(&record("../x", "/w", 1)).is_err());
        assert_eq!(store.settings_path(), dir.path().join("setting.json"));
    }
}
