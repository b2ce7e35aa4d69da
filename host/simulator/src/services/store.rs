//! Persisted V4 conversations: `services/sessions/<sessionId>.json` under the state directory
//! (`$ZCODE_SIM_STATE`, else `<root>/.sim-state`), replaced atomically, so a later server
//! process lists and resumes what an earlier one created. The queue and pending interactions
//! are not saved: they die with the process, as ZCode's do.

use std::path::{Path, PathBuf};

use super::v4::conversation::StoredConversation;
use crate::host::store::write_atomically;

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
