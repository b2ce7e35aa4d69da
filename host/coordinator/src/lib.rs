//! The protocol-neutral session coordinator.
//!
//! It binds ACP session ids (the native ids, opaque) to a workspace and a mapper session, runs
//! one actor per session (prompt state machine, interactions, cancel), and owns the lazily
//! started host. It speaks ACP only through the schema types it emits and the `ClientPort`;
//! everything native goes through the mapper via the host bridge.

mod acp_json;
mod client;
mod config;
mod error;
mod host;
mod session;
mod workspace;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    CloseSessionRequest, CloseSessionResponse, ForkSessionRequest, ForkSessionResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    NewSessionRequest, NewSessionResponse, PromptRequest, ResumeSessionRequest,
    ResumeSessionResponse, SessionId, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
};
use serde::Deserialize;
use zcode_contract::{ConnectionOp, FORK_METHOD, MapperFault, SessionInit, SessionOp};

pub use acp_json::{ChunkKind, TextChunk, Update};
pub use client::{ClientError, ClientPort, send_each};
pub use config::CoordinatorConfig;
pub use error::{CoordinatorError, FailureKind};
pub use host::{FactReader, Host, HostLauncher, HostSlot};
pub use session::{BoundSession, PendingPrompt};
pub use workspace::canonical_workspace;

use acp_json::Refused;
use session::{Actors, Binding, Deferred, SessionHandle, UpdatePort, op_setting_aside};

#[derive(Clone)]
pub struct Coordinator {
    inner: Arc<Inner>,
}

struct Inner {
    host: HostSlot,
    client: Arc<dyn ClientPort>,
    config: CoordinatorConfig,
    sessions: Mutex<HashMap<SessionId, SessionHandle>>,
    /// The sessions' actor tasks: they end with the coordinator at the latest.
    actors: Arc<Actors>,
}

impl Coordinator {
    pub fn new(
        launcher: Arc<dyn HostLauncher>,
        client: Arc<dyn ClientPort>,
        config: CoordinatorConfig,
    ) -> Self {
        let inner = Inner {
            host: HostSlot::new(launcher),
            client,
            config,
            sessions: Mutex::new(HashMap::new()),
            actors: Arc::default(),
        };
        Self { inner: Arc::new(inner) }
    }

    /// `session/new`: creates and subscribes the native session. The returned session starts
    /// processing events when `BoundSession::start` is called, after the response is sent.
    pub async fn new_session(
        &self,
        mut request: NewSessionRequest,
    ) -> Result<(NewSessionResponse, BoundSession), CoordinatorError> {
        refuse_additional_directories(&request.additional_directories)?;
        request.cwd = canonical_workspace(&request.cwd)?;
        let workspace = request.cwd.clone();
        let op = SessionOp::Create(acp_json::to_json(&request));
        // No session id exists before the response: nothing can be streamed to it.
        let (response, opened) =
            self.open_session::<NewSessionResponse>("session/new", None, &workspace, op).await?;
        let bound = self.register(response.session_id.clone(), workspace, opened)?;
        Ok((response, bound))
    }

    /// `session/load`: replays the history (streamed, then the rest of it sent before this
    /// returns), then binds.
    pub async fn load_session(
        &self,
        mut request: LoadSessionRequest,
    ) -> Result<(LoadSessionResponse, BoundSession), CoordinatorError> {
        refuse_additional_directories(&request.additional_directories)?;
        request.cwd = canonical_workspace(&request.cwd)?;
        self.unbind_for_rebinding(&request.session_id, &request.cwd).await?;
        let op = SessionOp::Load(acp_json::to_json(&request));
        let id = request.session_id;
        let (response, opened) =
            self.open_session("session/load", Some(id.clone()), &request.cwd, op).await?;
        Ok((response, self.register(id, request.cwd, opened)?))
    }

    /// `session/resume`: binds without replaying history.
    pub async fn resume_session(
        &self,
        mut request: ResumeSessionRequest,
    ) -> Result<(ResumeSessionResponse, BoundSession), CoordinatorError> {
        refuse_additional_directories(&request.additional_directories)?;
        request.cwd = canonical_workspace(&request.cwd)?;
        self.unbind_for_rebinding(&request.session_id, &request.cwd).await?;
        let op = SessionOp::Resume(acp_json::to_json(&request));
        let id = request.session_id;
        let (response, opened) =
            self.open_session("session/resume", Some(id.clone()), &request.cwd, op).await?;
        Ok((response, self.register(id, request.cwd, opened)?))
    }

    /// `session/fork`, first half: the mapper makes the native fork (a new session holding the
    /// parent's history; the parent is left as it was). [`Forked::load`] then loads the new
    /// session on the same mapper session like `session/load`: its history replays before the
    /// answer, in the parent's workspace. Refused before anything native happens when the
    /// mapper serving this ZCode does not offer it.
    pub async fn fork_session(
        &self,
        mut request: ForkSessionRequest,
    ) -> Result<Forked, CoordinatorError> {
        refuse_additional_directories(&request.additional_directories)?;
        request.cwd = canonical_workspace(&request.cwd)?;
        if let Some(parent) = self.inner.sessions.lock().unwrap().get(&request.session_id)
            && parent.workspace != request.cwd
        {
            return Err(CoordinatorError::InvalidParams(format!(
                "session {} belongs to workspace {}, not {}",
                request.session_id.0,
                parent.workspace.display(),
                request.cwd.display()
            )));
        }
        let host = self.inner.host.get().await?;
        if !host.mapper.contract().offers(FORK_METHOD) {
            return Err(CoordinatorError::NotOffered {
                method: FORK_METHOD,
                message: format!(
                    "session/fork is not supported by this ZCode ({}): it cannot fork sessions",
                    host.mapper.contract().protocol_id
                ),
            });
        }
        let binding = self.bind(&request.cwd).await?;
        let mut nothing = |_: Vec<String>| {
            Err(MapperFault("updates streamed before session/fork named the new session".into()))
        };
        let forked = binding.link.op(SessionOp::Fork(acp_json::to_json(&request)), &mut nothing);
        let child = match forked.await.map_err(CoordinatorError::from).and_then(|result| {
            #[derive(Deserialize)]
            #[serde(rename_all = "camelCase")]
            struct Forked {
                session_id: SessionId,
            }
            let forked: Forked = acp_json::parse("session/fork result", &result.response)?;
            Ok(forked.session_id)
        }) {
            Ok(child) => child,
            Err(error) => {
                if let Err(close) = binding.link.op(SessionOp::Close, &mut |_| Ok(())).await {
                    tracing::debug!(target: "zcode_acp::session", %close, "closing a session that failed to fork");
                }
                return Err(error);
            }
        };
        if child == request.session_id {
            return Err(CoordinatorError::failed(
                FailureKind::NativeProtocol,
                "ZCode forked a session into itself",
            ));
        }
        let mut load = LoadSessionRequest::new(child.clone(), request.cwd.clone())
            .mcp_servers(request.mcp_servers.clone());
        load.meta = request.meta.clone();
        Ok(Forked { coordinator: self.clone(), binding, load })
    }

    /// Binds a fresh mapper session for `workspace` and runs the operation that opens it.
    /// `known` is the id of a session being loaded or resumed: what the operation streams goes
    /// to it at once, and so do its remaining updates, before the response; a new session's
    /// updates wait until its response is out.
    async fn open_session<R: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        known: Option<SessionId>,
        workspace: &Path,
        op: SessionOp,
    ) -> Result<(R, Opened), CoordinatorError> {
        let binding = self.bind(workspace).await?;
        self.open_bound(binding, method, known, op).await
    }

    /// Runs the operation that opens a session on `binding` (see [`Self::open_session`]).
    async fn open_bound<R: serde::de::DeserializeOwned>(
        &self,
        mut binding: Binding,
        method: &'static str,
        known: Option<SessionId>,
        op: SessionOp,
    ) -> Result<(R, Opened), CoordinatorError> {
        let limit = self.inner.config.max_message_bytes;
        let mut port =
            known.clone().map(|id| UpdatePort::new(id, self.inner.client.clone(), limit));
        let mut too_large = None;
        let mut sink = |streamed: Vec<String>| match port.as_mut() {
            Some(port) => {
                port.send_json(&streamed).or_else(|refused| refused.keep_too_large(&mut too_large))
            }
            None => Err(MapperFault(format!("updates streamed before {method} named a session"))),
        };
        // What the session's stream brings meanwhile (an initial snapshot, a running turn's
        // events) is set aside for the session, as while any of its operations waits: left in
        // the queue, it would hold up the host's output, the reply this waits for with it.
        let Binding { link, inbound, deferred } = &mut binding;
        let result = op_setting_aside(link, inbound, deferred, op, &mut sink).await;
        let opened = match too_large {
            Some(error) => Err(error),
            None => result.map_err(CoordinatorError::from).and_then(|result| {
                let response: R = acp_json::parse(&format!("{method} response"), &result.response)?;
                let updates =
                    acp_json::updates(&result.updates, limit).map_err(Refused::into_error)?;
                Ok((response, updates))
            }),
        };
        let (response, updates) = match opened {
            Ok(opened) => opened,
            Err(error) => {
                // The native side may be open already (subscribed, loaded): release it, or the
                // next attempt finds it taken.
                let Binding { link, inbound, deferred } = &mut binding;
                let close = SessionOp::Close;
                if let Err(close) =
                    op_setting_aside(link, inbound, deferred, close, &mut |_| Ok(())).await
                {
                    tracing::debug!(target: "zcode_acp::session", %close, "closing a session that failed to open");
                }
                return Err(error);
            }
        };
        let after = match port {
            Some(port) => {
                port.send(updates);
                Vec::new()
            }
            None => updates,
        };
        Ok((response, Opened { binding, after }))
    }

    pub async fn list_sessions(
        &self,
        mut request: ListSessionsRequest,
    ) -> Result<ListSessionsResponse, CoordinatorError> {
        let Some(cwd) = request.cwd.as_deref() else {
            return Err(CoordinatorError::InvalidParams(
                "ZCode keeps sessions per workspace: session/list needs a cwd".into(),
            ));
        };
        request.cwd = Some(canonical_workspace(cwd)?);
        let host = self.inner.host.get().await?;
        let op = ConnectionOp::ListSessions(acp_json::to_json(&request));
        let result = host.bridge.connection_op(op).await?;
        Ok(acp_json::parse("session/list response", &result.response)?)
    }

    pub async fn close_session(
        &self,
        request: CloseSessionRequest,
    ) -> Result<CloseSessionResponse, CoordinatorError> {
        let handle = self.inner.sessions.lock().unwrap().remove(&request.session_id);
        match handle {
            Some(handle) => handle.close().await?,
            None => {
                return Err(CoordinatorError::SessionNotFound(request.session_id.0.to_string()));
            }
        }
        Ok(CloseSessionResponse::new())
    }

    pub async fn set_mode(
        &self,
        request: SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, CoordinatorError> {
        let handle = self.session(&request.session_id)?;
        let result = handle.op(SessionOp::SetMode(acp_json::to_json(&request))).await?;
        Ok(acp_json::parse("session/set_mode response", &result.response)?)
    }

    pub async fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, CoordinatorError> {
        let handle = self.session(&request.session_id)?;
        let result = handle.op(SessionOp::SetConfigOption(acp_json::to_json(&request))).await?;
        Ok(acp_json::parse("session/set_config_option response", &result.response)?)
    }

    /// `session/prompt`: queues the prompt at once — call it in message order, so that a
    /// `session/cancel` received after it applies to it. The returned answer resolves when the
    /// turn has ended natively and every interaction it raised was answered.
    pub fn prompt(&self, request: PromptRequest) -> Result<PendingPrompt, CoordinatorError> {
        let handle = self.session(&request.session_id)?;
        let json = acp_json::to_json(&request);
        acp_json::check_size("the prompt", json.len(), self.inner.config.max_message_bytes)?;
        handle.start_prompt(json)
    }

    /// `session/cancel` (and `$/cancel_request` for a prompt): idempotent.
    pub fn cancel(&self, session_id: &SessionId) {
        if let Ok(handle) = self.session(session_id) {
            handle.cancel();
        }
    }

    /// Connection closing: cancel every turn (their prompts answer `cancelled`), then stop the
    /// host without leaving a process behind.
    pub async fn shutdown(&self) {
        let handles: Vec<SessionHandle> =
            self.inner.sessions.lock().unwrap().drain().map(|(_, h)| h).collect();
        for handle in handles {
            let _ = handle.close().await;
        }
        self.inner.host.shutdown().await;
    }

    /// Runs a health probe against the host (for `doctor`): starts it if needed.
    pub async fn probe(&self, workspace: &Path) -> Result<String, CoordinatorError> {
        let host = self.inner.host.get().await?;
        Ok(host.bridge.connection_op(host.probe_op(workspace)).await?.response)
    }

    // ----- helpers -----------------------------------------------------------------------

    fn session(&self, id: &SessionId) -> Result<SessionHandle, CoordinatorError> {
        self.inner
            .sessions
            .lock()
            .unwrap()
            .get(id)
            .cloned()
            .ok_or_else(|| CoordinatorError::SessionNotFound(id.0.to_string()))
    }

    /// A fresh mapper session for `workspace`, linked to the (possibly just started) host.
    async fn bind(&self, workspace: &Path) -> Result<Binding, CoordinatorError> {
        let host = self.inner.host.get().await?;
        let init = SessionInit {
            facts: (host.facts)(),
            workspace: workspace.display().to_string(),
            client: self.inner.config.client,
        };
        let mapper_session = host.mapper.session(&init)?;
        let (link, inbound) = host.bridge.link_session(mapper_session);
        Ok(Binding { link, inbound: Some(inbound), deferred: Deferred::default() })
    }

    fn register(
        &self,
        id: SessionId,
        workspace: PathBuf,
        Opened { binding, after }: Opened,
    ) -> Result<BoundSession, CoordinatorError> {
        let bound = BoundSession::new(
            id.clone(),
            workspace,
            binding,
            self.inner.client.clone(),
            self.inner.config.clone(),
            after,
            Arc::downgrade(&self.inner.actors),
        );
        let mut sessions = self.inner.sessions.lock().unwrap();
        if sessions.contains_key(&id) {
            return Err(CoordinatorError::failed(
                FailureKind::NativeProtocol,
                format!("ZCode returned a session id that is already bound: {}", id.0),
            ));
        }
        sessions.insert(id, bound.handle.clone());
        Ok(bound)
    }

    /// A session is bound to one workspace: using it from another cwd is refused. Loading or
    /// resuming it again from the same cwd replaces the old binding.
    async fn unbind_for_rebinding(
        &self,
        id: &SessionId,
        cwd: &Path,
    ) -> Result<(), CoordinatorError> {
        let existing = self.inner.sessions.lock().unwrap().get(id).cloned();
        let Some(existing) = existing else { return Ok(()) };
        if existing.workspace != cwd {
            return Err(CoordinatorError::InvalidParams(format!(
                "session {} belongs to workspace {}, not {}",
                id.0,
                existing.workspace.display(),
                cwd.display()
            )));
        }
        self.inner.sessions.lock().unwrap().remove(id);
        existing.close().await
    }
}

/// A native fork made by [`Coordinator::fork_session`], its new session not loaded yet.
pub struct Forked {
    coordinator: Coordinator,
    binding: Binding,
    load: LoadSessionRequest,
}

impl Forked {
    /// The new session.
    pub fn session_id(&self) -> &SessionId {
        &self.load.session_id
    }

    /// `session/fork`, second half: loads the new session (its history streams to it before
    /// this returns) and binds it.
    pub async fn load(self) -> Result<(ForkSessionResponse, BoundSession), CoordinatorError> {
        let Forked { coordinator, binding, load } = self;
        let child = load.session_id.clone();
        let op = SessionOp::Load(acp_json::to_json(&load));
        let (loaded, opened) = coordinator
            .open_bound::<LoadSessionResponse>(binding, "session/fork", Some(child.clone()), op)
            .await?;
        let response = ForkSessionResponse::new(child.clone())
            .modes(loaded.modes)
            .config_options(loaded.config_options);
        Ok((response, coordinator.register(child, load.cwd, opened)?))
    }
}

/// A session opened natively, not yet registered under its id.
struct Opened {
    binding: Binding,
    /// Updates to send once the response naming the session is out.
    after: Vec<Update>,
}

/// The capability is not advertised (ZCode's host works in one directory): refuse it before
/// anything starts.
fn refuse_additional_directories(directories: &[PathBuf]) -> Result<(), CoordinatorError> {
    if directories.is_empty() {
        return Ok(());
    }
    Err(CoordinatorError::InvalidParams(
        "additionalDirectories is not supported: ZCode works in the session's cwd only".into(),
    ))
}
