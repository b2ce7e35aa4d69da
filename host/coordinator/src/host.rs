//! The ZCode host of one ACP connection: started lazily by the first operation that needs it,
//! shared by every workspace and session of the connection, never silently restarted under
//! sessions that were using it.

use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::BoxFuture;
use tokio::sync::Mutex;
use zcode_bridge::HostBridge;
use zcode_contract::{ConnectionOp, Facts, Mapper, ProbeRequest};

use crate::error::CoordinatorError;

/// A running host child, the mapper that speaks its protocol, and the facts its contract
/// declares (read again for each session).
#[derive(Clone)]
pub struct Host {
    pub bridge: HostBridge,
    pub mapper: Arc<dyn Mapper>,
    /// Reads the contract's facts for a new session (`SessionInit::facts`), as the files are
    /// now.
    pub facts: FactReader,
}

pub type FactReader = Arc<dyn Fn() -> Facts + Send + Sync>;

impl Host {
    /// `doctor`'s probe of `workspace`: it carries the facts a new session would get, read by
    /// the same reader, so the mapper can say what a session would (and the core need not know
    /// what any fact means).
    pub fn probe_op(&self, workspace: &Path) -> ConnectionOp {
        ConnectionOp::Probe(ProbeRequest {
            workspace: workspace.display().to_string(),
            facts: (self.facts)(),
        })
    }
}

/// Starts the host: discovery, the compatibility gate, mapper selection and the bridge.
/// Implemented by the CLI (real installs, `--simulate`) and by tests.
pub trait HostLauncher: Send + Sync + 'static {
    fn launch(&self) -> BoxFuture<'static, Result<Host, CoordinatorError>>;

    /// The optional ACP methods (`session/fork`) that the mapper which will serve this
    /// connection offers, as far as that is known without starting, hashing or loading
    /// anything: what `initialize` advertises. Default: none. A request for one is still
    /// checked against the mapper that serves it.
    fn offers(&self) -> Vec<String> {
        Vec::new()
    }
}

/// absent → starting → ready → (failed | stopping) → absent.
///
/// `starting` is the time `get` holds the lock while launching; a concurrent caller waits for
/// the same launch instead of starting a second child. A failed host stays failed for the
/// sessions bound to it (they were told through their event streams); the next *new*
/// operation launches a fresh host.
pub struct HostSlot {
    launcher: Arc<dyn HostLauncher>,
    current: Mutex<Option<Host>>,
}

impl HostSlot {
    pub fn new(launcher: Arc<dyn HostLauncher>) -> Self {
        Self { launcher, current: Mutex::new(None) }
    }

    pub async fn get(&self) -> Result<Host, CoordinatorError> {
        let mut current = self.current.lock().await;
        if let Some(host) = current.as_ref() {
            match host.bridge.closed_reason() {
                None => return Ok(host.clone()),
                Some(reason) => {
                    tracing::warn!(target: "zcode_acp::host", %reason, "host failed earlier; starting a new one");
                }
            }
        }
        tracing::info!(target: "zcode_acp::host", "starting the ZCode host");
        let host = self.launcher.launch().await?;
        tracing::info!(target: "zcode_acp::host", pid = host.bridge.pid(), "ZCode host ready");
        *current = Some(host.clone());
        Ok(host)
    }

    /// The running host, if any, without starting one.
    pub async fn running(&self) -> Option<Host> {
        self.current.lock().await.clone()
    }

    /// Stops the running host. A host still starting is not waited for (a first start may
    /// compile the mapper): the process is exiting, and the bridge's exit hooks and the closed
    /// stdin pipe stop whatever it spawns.
    pub async fn shutdown(&self) {
        let host = match self.current.try_lock() {
            Ok(mut current) => current.take(),
            Err(_) => {
                tracing::info!(target: "zcode_acp::host", "host still starting at shutdown; not waiting");
                None
            }
        };
        if let Some(host) = host {
            host.bridge.shutdown().await;
        }
    }
}
