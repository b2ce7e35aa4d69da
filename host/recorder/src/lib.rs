//! Session recording: `ZCODE_ACP_RECORD=<absolute path>` writes every mapper call of the
//! process — connection new/push/finish/start/resume/identity, session
//! new/start/resume/map/issue — as a golden trace (`docs/golden-traces.md`, written with
//! `zcode_golden::format`) that `zcode-acp mapper test` replays. A user's recording
//! of a real ZCode session thereby becomes a mapper test.
//!
//! Recordings are redacted unless `ZCODE_ACP_RECORD_UNREDACTED=1`: free text, paths and
//! credentials in the inputs are replaced by consistent placeholders (streamed text is masked,
//! protocol structure kept), and the expectations are
//! computed by a second instance of the mapper fed the redacted inputs, so the recording still
//! replays green (`docs/recording.md`).

mod recording;
mod redact;
mod shape;
mod sink;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use zcode_contract::Mapper;

pub use redact::Redactor;

use crate::recording::{RecordingMapper, Shared};
use crate::sink::Sink;

/// Absolute path of the recording; unset or empty: no recording.
pub const RECORD_ENV: &str = "ZCODE_ACP_RECORD";
/// `1`: record without redaction (local debugging only); `0` or unset: redacted.
pub const UNREDACTED_ENV: &str = "ZCODE_ACP_RECORD_UNREDACTED";

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("{RECORD_ENV} must be an absolute path, got `{0}`")]
    NotAbsolute(String),
    #[error("{UNREDACTED_ENV} must be 1 or 0, got `{0}`")]
    BadFlag(String),
    #[error("cannot create the recording {path}: {message}")]
    Create { path: String, message: String },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redaction {
    /// Free text, paths and credentials replaced by placeholders (the default).
    Redacted,
    /// Everything as the mapper saw it: prompts, file contents, credentials.
    Unredacted,
}

/// One recording file, shared by every mapper it wraps (each host the process starts).
#[derive(Clone)]
pub struct Recorder {
    shared: Arc<Shared>,
}

impl Recorder {
    /// Creates (or truncates) the recording at `path`, owner-only (0600 on Unix).
    pub fn create(path: &Path, redaction: Redaction) -> Result<Self, RecordError> {
        let sink = Sink::create(path)?;
        let redacted = redaction == Redaction::Redacted;
        let header = match redacted {
            true => {
                "redacted: free text, paths and credentials are placeholders, streamed text is \
                     masked; each expectation is the mapper's answer to the redacted input"
            }
            false => {
                "UNREDACTED: holds prompts, file contents and credentials as the mapper saw them"
            }
        };
        sink.write(&format!(
            "# zcode-acp {} session recording (docs/recording.md)\n# {header}\n",
            env!("CARGO_PKG_VERSION")
        ));
        match redacted {
            true => {
                tracing::info!(target: "zcode_acp::recording", path = %path.display(), "recording mapper calls (redacted)")
            }
            false => {
                tracing::warn!(target: "zcode_acp::recording", path = %path.display(), "recording mapper calls UNREDACTED: the file will hold prompts, file contents and credentials")
            }
        }
        Ok(Self { shared: Arc::new(Shared::new(sink, redacted)) })
    }

    /// The recording the environment asks for, if any (`lookup` reads a variable).
    pub fn from_env_with(
        lookup: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Option<Self>, RecordError> {
        let path = match lookup(RECORD_ENV) {
            Some(path) if !path.is_empty() => PathBuf::from(path),
            _ => return Ok(None),
        };
        let redaction = match lookup(UNREDACTED_ENV) {
            None => Redaction::Redacted,
            Some(flag) => match flag.to_str() {
                Some("" | "0") => Redaction::Redacted,
                Some("1") => Redaction::Unredacted,
                _ => return Err(RecordError::BadFlag(flag.to_string_lossy().into_owned())),
            },
        };
        Self::create(&path, redaction).map(Some)
    }

    /// The recording file.
    pub fn path(&self) -> &Path {
        self.shared.sink.path()
    }

    /// Lines where redaction changed a mapper result (each is marked in the file).
    pub fn divergences(&self) -> u64 {
        self.shared.divergences()
    }

    /// `mapper`, with every connection and session it creates recorded.
    pub fn wrap(&self, mapper: Arc<dyn Mapper>) -> Arc<dyn Mapper> {
        self.shared.sink.write(&format!("# mapper: {}\n", shown_source(mapper.source())));
        Arc::new(RecordingMapper { inner: mapper, shared: self.shared.clone() })
    }
}

/// Wraps `mapper` for recording when `ZCODE_ACP_RECORD` is set. The file is created on the
/// first call and shared by every later one (each host the process starts); an invalid
/// setting fails every call with the same error.
pub fn record_from_env(mapper: Arc<dyn Mapper>) -> Result<Arc<dyn Mapper>, RecordError> {
    static RECORDER: OnceLock<Result<Option<Recorder>, RecordError>> = OnceLock::new();
    let recorder = RECORDER.get_or_init(|| Recorder::from_env_with(|name| std::env::var_os(name)));
    match recorder {
        Ok(Some(recorder)) => Ok(recorder.wrap(mapper)),
        Ok(None) => Ok(mapper),
        Err(error) => Err(error.clone()),
    }
}

/// Embedded mappers by name; a drop-in file by its file name only (its folder may name the
/// user).
fn shown_source(source: &str) -> &str {
    if source.starts_with("embedded:") {
        return source;
    }
    Path::new(source).file_name().and_then(|name| name.to_str()).unwrap_or("a mapper file")
}
