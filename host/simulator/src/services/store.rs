//! Saved sessions: `services/sessions/<sessionId>.json` under the state directory
//! (`$ZCODE_SIM_STATE`, else `<root>/.sim-state`), so a later server process lists and resumes
//! what an earlier one created: the conversation record with its V4 log beside it, in one
//! object. The queue and pending interactions are not saved: they die with the process, as
//! ZCode's do.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::conversation::StoredConversation;
use crate::common::store::{Record, SessionFiles, state_dir};
use crate::v4::publisher::Log;

/// A session file.
#[derive(Debug, Deserialize)]
pub struct Saved {
    #[serde(flatten)]
    pub record: StoredConversation,
    #[serde(flatten)]
    pub log: Log,
}

/// A session file as written, from the live conversation.
#[derive(Serialize)]
struct Saving<'a> {
    #[serde(flatten)]
    record: &'a StoredConversation,
    #[serde(flatten)]
    log: &'a Log,
}

impl Record for Saved {
    fn session_id(&self) -> &str {
        &self.record.session_id
    }

    fn updated_at(&self) -> u64 {
        self.record.updated_at
    }
}

pub struct ConversationStore {
    sessions: SessionFiles<Saved>,
    root: PathBuf,
}

impl ConversationStore {
    pub fn for_root(root: &Path) -> ConversationStore {
        ConversationStore::at(state_dir(root).join("services"))
    }

    /// The store under `root` (`<root>/sessions`, `<root>/setting.json`).
    pub fn at(root: PathBuf) -> ConversationStore {
        ConversationStore { sessions: SessionFiles::at(root.join("sessions")), root }
    }

    /// The `setting` channel's file (`services/setting.json`).
    pub fn settings_path(&self) -> PathBuf {
        self.root.join("setting.json")
    }

    pub fn load(&self, session_id: &str) -> Result<Option<Saved>, String> {
        self.sessions.load(session_id)
    }

    pub fn save(&self, record: &StoredConversation, log: &Log) -> Result<(), String> {
        self.sessions.save(&record.session_id, &Saving { record, log })
    }

    /// The saved sessions of a workspace, newest first.
    pub fn list(&self, workspace_path: &str) -> Result<Vec<StoredConversation>, String> {
        let all = self.sessions.list()?.into_iter().map(|saved| saved.record);
        Ok(all.filter(|record| record.workspace_path == workspace_path).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::conversation::{Config, Cumulative};

    fn record(id: &str, workspace: &str, updated_at: u64) -> StoredConversation {
        StoredConversation {
            session_id: id.into(),
            workspace_path: workspace.into(),
            created_at: 1,
            updated_at,
            title: String::new(),
            title_source: "default".into(),
            revision: 0,
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
    fn lists_a_workspace_newest_first_with_the_log_beside_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let store = ConversationStore::at(dir.path().to_path_buf());
        let log = Log::new("epoch-a".into(), vec![serde_json::json!({"rowId": 1})]);
        store.save(&record("sess_a", "/w", 5), &log).unwrap();
        store.save(&record("sess_b", "/w", 9), &log).unwrap();
        store.save(&record("sess_c", "/other", 7), &log).unwrap();
        let listed: Vec<String> =
            store.list("/w").unwrap().into_iter().map(|r| r.session_id).collect();
        assert_eq!(listed, ["sess_b", "sess_a"]);
        let text = std::fs::read_to_string(dir.path().join("sessions/sess_a.json")).unwrap();
        let file: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (&file["sessionId"], &file["logEpoch"], &file["nextRowId"]),
            (&"sess_a".into(), &"epoch-a".into(), &2.into())
        );
        assert_eq!(store.load("sess_a").unwrap().unwrap().log.rows.len(), 1);
        assert!(store.save(&record("../x", "/w", 1), &log).is_err());
        assert_eq!(store.settings_path(), dir.path().join("setting.json"));
    }
}
