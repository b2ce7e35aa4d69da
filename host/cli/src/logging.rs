//! Diagnostics go to stderr (stdout carries ACP frames only), optionally mirrored as JSON lines
//! to `ZCODE_ACP_LOG_FILE`. Nothing logged anywhere carries prompt text, tool input, file
//! contents, credentials or provider headers: those never reach a log call.

use std::fs::OpenOptions;
use std::path::PathBuf;

use tracing::{Metadata, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::{FilterExt, filter_fn};
use tracing_subscriber::fmt::writer::MakeWriterExt;
use tracing_subscriber::layer::{Filter, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

pub const LOG_ENV: &str = "ZCODE_ACP_LOG";
pub const LOG_FILE_ENV: &str = "ZCODE_ACP_LOG_FILE";

/// Installs the global subscriber. `default` applies when `ZCODE_ACP_LOG` is unset
/// (e.g. `warn` for one-shot commands, `info` for the agent).
pub fn init(default: &str) -> Result<(), String> {
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr.with_max_level(tracing::Level::TRACE))
        .with_ansi(false)
        .with_filter(filter(default));
    let file = match std::env::var_os(LOG_FILE_ENV) {
        Some(path) => Some(open_log_file(PathBuf::from(path))?),
        None => None,
    };
    let file_layer = file.map(|file| {
        tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::sync::Mutex::new(file))
            .with_filter(filter(default))
    });
    tracing_subscriber::registry()
        .with(stderr)
        .with(file_layer)
        .try_init()
        .map_err(|e| format!("cannot install the logger: {e}"))
}

/// The user's filter (`ZCODE_ACP_LOG`, else `default`), capped: combined as AND, so no
/// directive of the user's (span-scoped ones included) can lift the cap.
fn filter<S: Subscriber>(default: &str) -> impl Filter<S> + use<S> {
    let user = EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new(default));
    user.and(filter_fn(|event| !is_sdk_frame_trace(event)))
}

/// The SDK traces whole JSON-RPC frames (prompt text, tool input, file contents) at trace
/// level: never logged, whatever the user asks for.
fn is_sdk_frame_trace(event: &Metadata<'_>) -> bool {
    event.target().starts_with("agent_client_protocol") && *event.level() == tracing::Level::TRACE
}

/// The log file is created private (0600) and only ever appended to.
fn open_log_file(path: PathBuf) -> Result<std::fs::File, String> {
    if !path.is_absolute() {
        return Err(format!("{LOG_FILE_ENV} must be an absolute path, got {}", path.display()));
    }
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(&path).map_err(|e| format!("cannot open {LOG_FILE_ENV} {}: {e}", path.display()))
}

use tracing_subscriber::Layer as _;
