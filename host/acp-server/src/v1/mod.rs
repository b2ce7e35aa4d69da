//! The ACP v1 agent: `initialize` and capability advertising, and method routing to the
//! session coordinator.
//!
//! The dispatch is thin: one named method per request on [`V1Agent`]. Every method returns
//! to the SDK's dispatch loop at once and does its work in a spawned task (a handler that
//! awaited a client answer would deadlock the loop). Each request is answered exactly once:
//! the responder is moved into the task and consumed on every path.

mod capabilities;
mod chunk_frames;
mod client_port;

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    AuthenticateRequest, AuthenticateResponse, CancelNotification, CloseSessionRequest,
    CloseSessionResponse, ForkSessionRequest, ForkSessionResponse, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, LogoutRequest, LogoutResponse, NewSessionRequest, NewSessionResponse,
    PromptRequest, PromptResponse, ResumeSessionRequest, ResumeSessionResponse,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{
    Agent, Client, ConnectTo, Error, ErrorCode, JsonRpcResponse, on_receive_notification,
    on_receive_request,
};
use zcode_coordinator::{BoundSession, CoordinatorError};

use crate::{AgentState, LOG, answer, confirm_login};
use client_port::AcpClient;

/// The v1 agent of one connection.
#[derive(Clone)]
struct V1Agent {
    state: Arc<AgentState>,
}

/// The v1 implementation for the protocol router.
pub(crate) fn agent(state: Arc<AgentState>) -> impl ConnectTo<Client> + 'static {
    let agent = V1Agent { state };
    macro_rules! request {
        ($builder:expr, $method:ident) => {{
            let agent = agent.clone();
            $builder.on_receive_request(
                async move |request, responder, cx: ConnectionTo<Client>| {
                    agent.$method(request, responder, cx)
                },
                on_receive_request!(),
            )
        }};
    }
    let builder = Agent.v1().name("zcode-acp");
    let builder = request!(builder, initialize);
    let builder = request!(builder, authenticate);
    let builder = request!(builder, logout);
    let builder = request!(builder, new_session);
    let builder = request!(builder, load_session);
    let builder = request!(builder, resume_session);
    let builder = request!(builder, fork_session);
    let builder = request!(builder, list_sessions);
    let builder = request!(builder, close_session);
    let builder = request!(builder, set_mode);
    let builder = request!(builder, set_config_option);
    let builder = request!(builder, prompt);
    builder.on_receive_notification(
        async move |notification: CancelNotification, _cx| {
            agent.cancel(notification);
            Ok(())
        },
        on_receive_notification!(),
    )
}

impl V1Agent {
    fn initialize(
        &self,
        request: InitializeRequest,
        responder: Responder<InitializeResponse>,
        cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let capabilities = &request.client_capabilities;
        let response = capabilities::initialize_response(
            capabilities,
            &self.state.config.version,
            &self.state.offers(),
        );
        if self.state.initialized() {
            return responder.respond_with_error(Error::new(
                ErrorCode::INVALID_REQUEST,
                "the connection is already initialized",
            ));
        }
        let client = Arc::new(AcpClient::new(cx, self.state.config.flow.clone()));
        self.state.start_coordinator(client, capabilities::client_features(capabilities));
        tracing::info!(target: LOG, client_version = ?request.protocol_version, "initialized");
        responder.respond(response)
    }

    /// `authenticate` with the terminal method: confirms that the login the client ran has
    /// completed.
    fn authenticate(
        &self,
        request: AuthenticateRequest,
        responder: Responder<AuthenticateResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let account = self.state.account.clone();
        answer("authenticate", responder, async move {
            confirm_login(account, &request.method_id.0).await.map(|()| AuthenticateResponse::new())
        })
    }

    fn logout(
        &self,
        _request: LogoutRequest,
        responder: Responder<LogoutResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let account = self.state.account.clone();
        answer("logout", responder, async move {
            account.logout().await.map(|()| LogoutResponse::new()).map_err(Into::into)
        })
    }

    fn new_session(
        &self,
        request: NewSessionRequest,
        responder: Responder<NewSessionResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let coordinator = self.state.coordinator()?;
        open_session(
            "session/new",
            responder,
            async move { coordinator.new_session(request).await },
        )
    }

    /// `session/load`: the history replays before the answer.
    fn load_session(
        &self,
        request: LoadSessionRequest,
        responder: Responder<LoadSessionResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let coordinator = self.state.coordinator()?;
        open_session(
            "session/load",
            responder,
            async move { coordinator.load_session(request).await },
        )
    }

    fn resume_session(
        &self,
        request: ResumeSessionRequest,
        responder: Responder<ResumeSessionResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let coordinator = self.state.coordinator()?;
        open_session("session/resume", responder, async move {
            coordinator.resume_session(request).await
        })
    }

    /// `session/fork` (unstable in v1): the new session's history replays before the answer,
    /// like a load's.
    fn fork_session(
        &self,
        request: ForkSessionRequest,
        responder: Responder<ForkSessionResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let coordinator = self.state.coordinator()?;
        open_session("session/fork", responder, async move {
            coordinator.fork_session(request).await?.load().await
        })
    }

    fn list_sessions(
        &self,
        request: ListSessionsRequest,
        responder: Responder<ListSessionsResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let coordinator = self.state.coordinator()?;
        answer("session/list", responder, async move {
            coordinator.list_sessions(request).await.map_err(Into::into)
        })
    }

    fn close_session(
        &self,
        request: CloseSessionRequest,
        responder: Responder<CloseSessionResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let coordinator = self.state.coordinator()?;
        answer("session/close", responder, async move {
            coordinator.close_session(request).await.map_err(Into::into)
        })
    }

    fn set_mode(
        &self,
        request: SetSessionModeRequest,
        responder: Responder<SetSessionModeResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let coordinator = self.state.coordinator()?;
        answer("session/set_mode", responder, async move {
            coordinator.set_mode(request).await.map_err(Into::into)
        })
    }

    fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
        responder: Responder<SetSessionConfigOptionResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let coordinator = self.state.coordinator()?;
        answer("session/set_config_option", responder, async move {
            coordinator.set_config_option(request).await.map_err(Into::into)
        })
    }

    fn prompt(
        &self,
        request: PromptRequest,
        responder: Responder<PromptResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let coordinator = self.state.coordinator()?;
        // Queued here, in the dispatch loop: a `session/cancel` that follows the prompt on the
        // wire is then handled after it, never lost before it.
        let session_id = request.session_id.clone();
        let pending = match coordinator.prompt(request) {
            Ok(pending) => pending,
            Err(error) => {
                report("session/prompt", responder, error);
                return Ok(());
            }
        };
        // `$/cancel_request` naming this prompt cancels the turn like `session/cancel`; the
        // prompt still gets its one answer (`cancelled`).
        let cancellation = responder.cancellation();
        answer("session/prompt", responder, async move {
            let answer = pending.answer();
            tokio::pin!(answer);
            let result = tokio::select! {
                result = &mut answer => result,
                () = cancellation.cancelled() => {
                    coordinator.cancel(&session_id);
                    answer.await
                }
            };
            result.map_err(Into::into)
        })
    }

    fn cancel(&self, notification: CancelNotification) {
        if let Ok(coordinator) = self.state.coordinator() {
            coordinator.cancel(&notification.session_id);
        }
    }
}

/// `session/new`, `session/load`, `session/resume`, `session/fork`: opens the session off the dispatch loop,
/// answers with it, and only then lets its updates flow (the answer names the session).
fn open_session<T, F>(method: &'static str, responder: Responder<T>, open: F) -> Result<(), Error>
where
    T: JsonRpcResponse + Send + 'static,
    F: Future<Output = Result<(T, BoundSession), CoordinatorError>> + Send + 'static,
{
    tokio::spawn(async move {
        match open.await {
            Ok((response, bound)) => {
                let _ = responder.respond(response);
                bound.start();
            }
            Err(error) => report(method, responder, error),
        }
    });
    Ok(())
}

fn report<T: JsonRpcResponse>(
    method: &'static str,
    responder: Responder<T>,
    error: CoordinatorError,
) {
    let error: Error = error.into();
    tracing::warn!(target: LOG, method, code = error.code.value(), message = %error.message, "request failed");
    let _ = responder.respond_with_error(error);
}
