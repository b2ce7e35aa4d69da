//! Test support: an NDJSON test mapper, launch plans for the fake host, log capture and
//! process-table checks. Each test binary uses part of it.
#![allow(dead_code)]

pub mod mapper;
#[cfg(target_os = "linux")]
pub mod procs;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use zcode_bridge::{BridgeOptions, HostBridge, HostSpec, OpFailure, SessionLink};
use zcode_contract::{LaunchPlan, LayoutKind, OpResult, SessionOp, VerifiedInstall};

#[allow(unused_imports)]
pub use mapper::{Script, TestConnection, TestSession};

/// Bound on anything a test waits for; only a hang guard, never an assertion about speed.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

pub fn fake_host_path() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_zcode-bridge-fake-host")).canonicalize().unwrap()
}

pub fn exit_probe_path() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_zcode-bridge-exit-probe")).canonicalize().unwrap()
}

/// An install whose verified executable is the fake host (its directory is the root).
pub fn install() -> VerifiedInstall {
    let host = fake_host_path();
    let root = host.parent().unwrap().to_string_lossy().into_owned();
    VerifiedInstall {
        facts: Default::default(),
        install_root: root.clone(),
        kind: LayoutKind::Desktop,
        executable: host.to_string_lossy().into_owned(),
        cli_entry: String::new(),
        host_archive: String::new(),
        release_id: "fake".into(),
        app_version: "0.0.0".into(),
        cli_version: "0.0.0".into(),
        files: vec![],
        unpinned: vec![],
        home: root,
    }
}

pub fn plan(args: &[&str]) -> LaunchPlan {
    LaunchPlan {
        args: args.iter().map(|a| a.to_string()).collect(),
        cwd: std::env::temp_dir().to_string_lossy().into_owned(),
        ..LaunchPlan::default()
    }
}

/// What a test spawns: the fake host as `install()`, with `plan`, no identity to confirm and
/// no credentials.
pub async fn spawn(
    plan: &LaunchPlan,
    connection: TestConnection,
    options: BridgeOptions,
) -> Result<HostBridge, zcode_bridge::BridgeError> {
    let install = install();
    let spec =
        HostSpec { install: &install, plan, identity: None, credentials: Default::default() };
    HostBridge::spawn(spec, Box::new(connection), options).await
}

/// Runs a session operation, collecting what it streams.
pub async fn session_op(link: &SessionLink, op: SessionOp) -> Result<OpResult, OpFailure> {
    session_op_streaming(link, op).await.0
}

/// Runs a session operation; also returns the updates it streamed while waiting, in order.
pub async fn session_op_streaming(
    link: &SessionLink,
    op: SessionOp,
) -> (Result<OpResult, OpFailure>, Vec<String>) {
    let mut streamed = Vec::new();
    let mut sink = |updates: Vec<String>| {
        streamed.extend(updates);
        Ok(())
    };
    let result = link.op(op, &mut sink).await;
    (result, streamed)
}

/// Production values except short grace periods, so terminating a stubborn host is quick.
pub fn options() -> BridgeOptions {
    BridgeOptions {
        exit_grace: Duration::from_millis(300),
        term_grace: Duration::from_millis(300),
        ..BridgeOptions::default()
    }
}

pub async fn start(args: &[&str]) -> HostBridge {
    start_with(plan(args), TestConnection::default(), options()).await
}

pub async fn start_with(
    plan: LaunchPlan,
    connection: TestConnection,
    options: BridgeOptions,
) -> HostBridge {
    guard(spawn(&plan, connection, options)).await.unwrap()
}

/// Awaits `future` under the hang guard.
pub async fn guard<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(HANG_GUARD, future).await.expect("hang guard: the test is stuck")
}

/// The test mapper's response: `{"replies":[{"id":N,"ok":..}|{"id":N,"error":..}|{"id":N,"lost":..}]}`.
pub fn replies(result: &Result<OpResult, OpFailure>) -> Vec<Value> {
    let result = result.as_ref().unwrap_or_else(|e| panic!("operation failed: {e:?}"));
    let response: Value = serde_json::from_str(&result.response).unwrap();
    response["replies"].as_array().unwrap().clone()
}

pub fn reply_id(reply: &Value) -> u64 {
    reply["id"].as_u64().unwrap()
}

/// Captured log output of the current thread (tests run on a current-thread runtime, so the
/// bridge's tasks log here too).
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<u8>>>);

impl Logs {
    pub fn capture() -> (Self, tracing::subscriber::DefaultGuard) {
        let logs = Self::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .without_time()
            .with_writer(move || writer.clone())
            .finish();
        (logs, tracing::subscriber::set_default(subscriber))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
