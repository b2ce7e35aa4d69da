//! The public handle: spawn, connection operations, session links, shutdown.

use std::sync::Arc;

use tokio::sync::mpsc;
use zcode_contract::{
    ConnectionOp, LaunchPlan, MapperConnection, MapperFault, MapperSession, OpResult,
    VerifiedInstall,
};
use zcode_credentials::CredentialStore;

use crate::driver::drive;
use crate::error::{BridgeError, OpFailure};
use crate::group::ProcessGroup;
use crate::options::BridgeOptions;
use crate::session::{SessionLink, SessionQueue, SessionReceiver};
use crate::shared::{Owner, Shared};
use crate::sync::lock;
use crate::{launch, lifecycle, pumps};

/// What to start: a verified install, the mapper's plan for it, and what the release says the
/// host must report about itself.
pub struct HostSpec<'a> {
    pub install: &'a VerifiedInstall,
    pub plan: &'a LaunchPlan,
    /// The release's `identity`: a host reporting anything else after setup is refused.
    /// Required when the install has unpinned files.
    pub identity: Option<&'a str>,
    pub credentials: CredentialStore,
}

/// One running ZCode host child and the transport to it. Clones share the child; when the last
/// clone is dropped without [`shutdown`](Self::shutdown), the child's process group is killed.
#[derive(Clone)]
pub struct HostBridge {
    handle: Arc<Handle>,
}

/// Owned only by `HostBridge` clones (the tasks and session links hold `Shared`), so its drop
/// means nobody can use the child any more.
struct Handle {
    shared: Arc<Shared>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        if !*self.shared.terminated.borrow() {
            self.shared.fail_closed("the host bridge was dropped without shutdown".into());
            self.shared.group.kill();
        }
    }
}

impl HostBridge {
    /// Starts the verified executable as the plan says, waits for its handshake if it needs
    /// one, runs `ConnectionOp::Setup` to completion and checks the identity the host reported.
    /// On any failure the child is shut down first.
    pub async fn spawn(
        spec: HostSpec<'_>,
        connection: Box<dyn MapperConnection>,
        options: BridgeOptions,
    ) -> Result<HostBridge, BridgeError> {
        let HostSpec { install, plan, identity, credentials } = spec;
        if identity.is_none() && !install.unpinned.is_empty() {
            return Err(BridgeError::Unverifiable(install.unpinned.join(", ")));
        }
        let program = launch::verified_executable(install)?;
        let mut child = launch::command(&program, plan)?
            .spawn()
            .map_err(|source| BridgeError::Spawn { program: program.clone(), source })?;
        let pid = child.id().expect("a child that was just spawned has a pid");
        // From here on the group is killed if anything below fails or panics.
        let group = ProcessGroup::adopt(pid);
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            unreachable!("all three stdio streams are piped by launch::command");
        };
        tracing::info!(pid, "ZCode host started");

        let (writer, queue) = mpsc::unbounded_channel();
        if !plan.stdin_preamble.is_empty() {
            let _ = writer.send(plan.stdin_preamble.clone());
        }
        let shared = Arc::new(Shared::new(options, pid, group, credentials, connection, writer));
        let bridge = HostBridge { handle: Arc::new(Handle { shared: shared.clone() }) };
        tokio::spawn(pumps::write_stdin(shared.clone(), stdin, queue));
        tokio::spawn(pumps::read_stdout(shared.clone(), stdout));
        tokio::spawn(pumps::drain_stderr(stderr));
        tokio::spawn(lifecycle::reap(shared.clone(), child));
        tokio::spawn(lifecycle::supervise(shared));

        let started = async {
            if plan.needs_handshake {
                bridge.wait_ready().await?;
            }
            bridge.connection_op(ConnectionOp::Setup).await.map_err(BridgeError::Setup)?;
            bridge.check_identity(identity)
        };
        match started.await {
            Ok(()) => Ok(bridge),
            Err(error) => {
                bridge.shutdown().await;
                Err(error)
            }
        }
    }

    async fn wait_ready(&self) -> Result<(), BridgeError> {
        let shared = &self.handle.shared;
        let timeout = shared.options.handshake_timeout;
        let mut changes = shared.subscribe_changes();
        let ready = async {
            loop {
                if let Some(reason) = shared.closed_reason() {
                    return Err(BridgeError::HandshakeFailed(reason));
                }
                if shared.is_ready() {
                    return Ok(());
                }
                // The sender lives in `shared`, which is borrowed here: this cannot fail.
                let _ = changes.changed().await;
            }
        };
        match tokio::time::timeout(timeout, ready).await {
            Ok(result) => result,
            Err(_) => Err(BridgeError::HandshakeTimeout { timeout }),
        }
    }

    /// The host must report what its release says it is, when the release says anything.
    fn check_identity(&self, expected: Option<&str>) -> Result<(), BridgeError> {
        let shared = &self.handle.shared;
        let reported = lock(&shared.connection).identity().map_err(|fault| {
            shared.fail_closed(fault.to_string());
            BridgeError::Setup(OpFailure::Fault(fault))
        })?;
        match expected {
            Some(expected) if reported.as_deref() != Some(expected) => {
                Err(BridgeError::IdentityMismatch {
                    expected: expected.to_string(),
                    reported: reported.unwrap_or_else(|| "nothing".into()),
                })
            }
            _ => Ok(()),
        }
    }

    /// Runs a connection-level operation. A mapper fault fails the whole transport.
    pub async fn connection_op(&self, op: ConnectionOp) -> Result<OpResult, OpFailure> {
        let shared = &self.handle.shared;
        tracing::debug!(op = op.name(), "connection operation");
        // The driver refuses updates from connection operations before they get here.
        let mut no_updates = |_: Vec<String>| -> Result<(), MapperFault> {
            Err(MapperFault("a connection operation cannot send session updates".into()))
        };
        let result =
            drive(shared, Owner::Connection, &shared.connection, &op, &mut no_updates).await;
        if let Err(OpFailure::Fault(fault)) = &result {
            shared.fail_closed(fault.to_string());
        }
        result
    }

    /// Binds a mapper session to this host: returns the link and the ordered stream of what is
    /// routed to it (its input, then `TransportClosed` if the transport closes).
    pub fn link_session(&self, session: Box<dyn MapperSession>) -> (SessionLink, SessionReceiver) {
        let shared = &self.handle.shared;
        let id = shared.next_link_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (inbound_tx, inbound_rx) = SessionQueue::new();
        shared.add_session(id, inbound_tx);
        let inbound = SessionReceiver::new(inbound_rx, shared.closed_watch());
        (SessionLink::new(id, shared.clone(), session), inbound)
    }

    /// Why the transport closed, once it has.
    pub fn closed_reason(&self) -> Option<String> {
        self.handle.shared.closed_reason()
    }

    /// The child's pid until it has been reaped.
    pub fn pid(&self) -> Option<u32> {
        let shared = &self.handle.shared;
        shared.exit.borrow().is_none().then_some(shared.pid)
    }

    /// Stops accepting operations, answers pending requests `Lost("shutting down")`, closes the
    /// child's stdin, and terminates its process group (SIGTERM, then SIGKILL, after the grace
    /// periods of [`BridgeOptions`]). Idempotent; returns when the group is gone.
    pub async fn shutdown(&self) {
        let shared = &self.handle.shared;
        shared.fail_closed("shutting down".into());
        let mut terminated = shared.terminated.subscribe();
        let _ = terminated.wait_for(|done| *done).await;
    }
}
