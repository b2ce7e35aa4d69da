//! The recording file: created owner-only, written one whole call at a time.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::RecordError;

pub struct Sink {
    path: PathBuf,
    file: Mutex<Option<File>>,
    /// False once a write failed: recording stops, the session goes on.
    active: AtomicBool,
}

impl Sink {
    /// Creates (or truncates) the file with mode 0600. The folder must exist.
    pub fn create(path: &Path) -> Result<Self, RecordError> {
        if !path.is_absolute() {
            return Err(RecordError::NotAbsolute(path.display().to_string()));
        }
        let fail = |error: std::io::Error| RecordError::Create {
            path: path.display().to_string(),
            message: error.to_string(),
        };
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
            options.mode(0o600);
            let file = options.open(path).map_err(fail)?;
            // An existing file keeps its mode on open; a recording is never group-readable.
            file.set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(fail)?;
            Ok(Self::new(path, file))
        }
        #[cfg(not(unix))]
        {
            Ok(Self::new(path, options.open(path).map_err(fail)?))
        }
    }

    fn new(path: &Path, file: File) -> Self {
        Self {
            path: path.to_path_buf(),
            file: Mutex::new(Some(file)),
            active: AtomicBool::new(true),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// Appends whole lines in one write, so lines of concurrent calls never interleave.
    pub fn write(&self, text: &str) {
        let mut file = self.file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(open) = file.as_mut() else { return };
        if let Err(error) = open.write_all(text.as_bytes()) {
            tracing::warn!(
                target: "zcode_acp::recording",
                path = %self.path.display(),
                %error,
                "cannot write the recording; recording stopped (the session goes on)"
            );
            *file = None;
            self.active.store(false, Ordering::Relaxed);
        }
    }
}
