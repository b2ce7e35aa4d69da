//! The public handle: spawn, operations, session links, shutdown.

use std::sync::Arc;

use tokio::sync::mpsc;
use zcode_contract::{
    ConnectionOp, LaunchPlan, MapperConnection, MapperSession, OpResult, SessionOp, VerifiedInstall,
};

use crate::driver::drive;
use crate::error::{BridgeError, OpFailure};
use crate::group::ProcessGroup;
use crate::options::BridgeOptions;
use crate::session::{SessionInbound, SessionLink};
use crate::shared::{Owner, Shared, lock};
use crate::{launch, lifecycle, pumps};

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
    /// Starts the host as `plan` says, waits for its handshake if it needs one, and runs
    /// `ConnectionOp::Setup` to completion. On any failure the child is shut down first.
    pub async fn spawn(
        plan: &LaunchPlan,
        install: &VerifiedInstall,
        connection: Box<dyn MapperConnection>,
        options: BridgeOptions,
    ) -> Result<HostBridge, BridgeError> {
        let program = launch::verified_program(plan, install)?;
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
        let shared = Arc::new(Shared::new(options, pid, group, connection, writer));
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
            bridge.connection_op(ConnectionOp::Setup).await.map_err(BridgeError::Setup)
        };
        match started.await {
            Ok(_) => Ok(bridge),
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

    /// Runs a connection-level operation. A mapper fault fails the whole transport.
    pub async fn connection_op(&self, op: ConnectionOp) -> Result<OpResult, OpFailure> {
        let shared = &self.handle.shared;
        tracing::debug!(op = connection_op_name(&op), "connection operation");
        let result = drive(
            shared,
            Owner::Connection,
            |op_id, first| lock(&shared.connection).start(op_id, &op, first),
            |op_id, reply, first| lock(&shared.connection).resume(op_id, reply, first),
        )
        .await;
        if let Err(OpFailure::Fault(fault)) = &result {
            shared.fail_closed(fault.to_string());
        }
        result
    }

    /// Binds a mapper session to this host: returns the link and the ordered stream of what is
    /// routed to it (events for its routes, then `TransportClosed` if the transport closes).
    pub fn link_session(
        &self,
        session: Box<dyn MapperSession>,
    ) -> (SessionLink, mpsc::UnboundedReceiver<SessionInbound>) {
        let shared = &self.handle.shared;
        let id = shared.next_link_id.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (inbound_tx, inbound_rx) = mpsc::unbounded_channel();
        shared.add_session(id, inbound_tx);
        (SessionLink::new(id, shared.clone(), session), inbound_rx)
    }

    /// Runs a session operation. A mapper fault makes that session unusable (later ops and
    /// `map_event` return the same fault); other sessions carry on.
    pub async fn session_op(
        &self,
        link: &SessionLink,
        op: SessionOp,
    ) -> Result<OpResult, OpFailure> {
        let shared = &self.handle.shared;
        if !Arc::ptr_eq(&link.inner.shared, shared) {
            return Err(OpFailure::Transport("the session is linked to a different host".into()));
        }
        link.check_usable().map_err(OpFailure::Fault)?;
        tracing::debug!(op = op.name(), "session operation");
        let session = &link.inner.session;
        let result = drive(
            shared,
            Owner::Session(link.inner.id),
            |op_id, first| lock(session).start(op_id, &op, first),
            |op_id, reply, first| lock(session).resume(op_id, reply, first),
        )
        .await;
        if let Err(OpFailure::Fault(fault)) = &result {
            link.poison(fault.clone());
        }
        result
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

fn connection_op_name(op: &ConnectionOp) -> &'static str {
    match op {
        ConnectionOp::Setup => "setup",
        ConnectionOp::Probe(_) => "probe",
        ConnectionOp::ListSessions(_) => "list-sessions",
    }
}
