//! What the simulator keeps on disk, whichever generation it plays: one JSON file per session
//! in a folder of the state directory (`$ZCODE_SIM_STATE`, else `<install-root>/.sim-state`),
//! replaced atomically, so a later process lists, reads and resumes what an earlier one wrote.
//! Each generation keeps only its own record type and folder.

use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A session record as its file holds it.
pub trait Record: DeserializeOwned {
    fn session_id(&self) -> &str;
    fn updated_at(&self) -> u64;
}

/// `$ZCODE_SIM_STATE` if set, else `<install-root>/.sim-state`.
pub fn state_dir(install_root: &Path) -> PathBuf {
    std::env::var_os("ZCODE_SIM_STATE")
        .map(PathBuf::from)
        .unwrap_or_else(|| install_root.join(".sim-state"))
}

/// `<sessionId>.json` files in one folder.
pub struct SessionFiles<T> {
    dir: PathBuf,
    record: PhantomData<fn() -> T>,
}

impl<T: Record> SessionFiles<T> {
    pub fn at(dir: PathBuf) -> SessionFiles<T> {
        SessionFiles { dir, record: PhantomData }
    }

    fn file(&self, session_id: &str) -> Option<PathBuf> {
        // Session ids come from clients; only our own id alphabet may reach the filesystem.
        let safe = !session_id.is_empty()
            && session_id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        safe.then(|| self.dir.join(format!("{session_id}.json")))
    }

    pub fn load(&self, session_id: &str) -> Result<Option<T>, String> {
        let Some(path) = self.file(session_id) else { return Ok(None) };
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|error| format!("corrupt session file {}: {error}", path.display())),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(format!("cannot read {}: {error}", path.display())),
        }
    }

    /// Saves `record` (a `T` as written, which may be assembled from borrowed parts).
    pub fn save(&self, session_id: &str, record: &impl Serialize) -> Result<(), String> {
        let path =
            self.file(session_id).ok_or_else(|| format!("invalid session id {session_id}"))?;
        let bytes = serde_json::to_vec(record).map_err(|error| error.to_string())?;
        write_atomically(&path, &bytes)
    }

    pub fn delete(&self, session_id: &str) -> Result<(), String> {
        let Some(path) = self.file(session_id) else { return Ok(()) };
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(format!("cannot remove {}: {error}", path.display())),
        }
    }

    /// Every stored session, newest first.
    pub fn list(&self) -> Result<Vec<T>, String> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(format!("cannot list sessions: {error}")),
        };
        let mut records = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|name| name.strip_suffix(".json")) else {
                continue;
            };
            if let Some(record) = self.load(id)? {
                records.push(record);
            }
        }
        records.sort_by(|a: &T, b: &T| {
            b.updated_at().cmp(&a.updated_at()).then_with(|| a.session_id().cmp(b.session_id()))
        });
        Ok(records)
    }
}

pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let parent = path.parent().expect("state files live in a directory");
    std::fs::create_dir_all(parent)
        .map_err(|error| format!("cannot create {}: {error}", parent.display()))?;
    let temporary = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&temporary, bytes)
        .and_then(|()| std::fs::rename(&temporary, path))
        .map_err(|error| format!("cannot write {}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Serialize, Deserialize)]
    struct Note {
        id: String,
        at: u64,
    }

    impl Record for Note {
        fn session_id(&self) -> &str {
            &self.id
        }
        fn updated_at(&self) -> u64 {
            self.at
        }
    }

    fn note(id: &str, at: u64) -> Note {
        Note { id: id.into(), at }
    }

    #[test]
    fn saves_lists_newest_first_and_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let files = SessionFiles::<Note>::at(dir.path().join("sessions"));
        for (id, at) in [("a", 5), ("b", 9), ("c", 9)] {
            files.save(id, &note(id, at)).unwrap();
        }
        let ids: Vec<String> = files.list().unwrap().into_iter().map(|n| n.id).collect();
        assert_eq!(ids, ["b", "c", "a"]);
        files.delete("b").unwrap();
        files.delete("b").unwrap();
        assert!(files.load("b").unwrap().is_none());
    }

    #[test]
    fn never_turns_a_foreign_id_into_a_path() {
        let dir = tempfile::tempdir().unwrap();
        let files = SessionFiles::<Note>::at(dir.path().to_path_buf());
        assert!(files.load("../../etc/passwd").unwrap().is_none());
        assert!(files.save("../x", &note("../x", 1)).is_err());
    }
}
