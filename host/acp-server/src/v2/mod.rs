//! The ACP v2 agent: the same coordinator and mappers as v1, seen through v2.
//!
//! The coordinator speaks v1 (its requests, answers and the updates it sends); this module
//! converts v2 requests on the way in ([`convert`]), translates what comes out
//! ([`translate`], through [`client_port`]) and runs v2's own lifecycle ([`sessions`]: prompts
//! acknowledged at once and ended by `state_update`, held prompts, replay markers). The
//! dispatch is thin: one named method per request on [`V2Agent`]; work that waits runs in a
//! spawned task, so the dispatch loop never waits on the client.

mod capabilities;
mod client_port;
mod convert;
mod patch;
mod sessions;
mod translate;

use std::sync::{Arc, Mutex};

use agent_client_protocol::v2::schema as v2;
use agent_client_protocol::v2::{ConnectionTo, Responder};
use agent_client_protocol::{
    Agent, Client, ConnectTo, Error, ErrorCode, JsonRpcResponse, on_receive_notification,
    on_receive_request,
};
use zcode_coordinator::{BoundSession, Coordinator};

use crate::{AgentState, LOG, answer, confirm_login};
use client_port::V2Client;
use sessions::{Sessions, not_found};

/// The v2 agent of one connection.
#[derive(Clone)]
struct V2Agent {
    state: Arc<AgentState>,
    /// Set by `initialize` (a repeat before any other request replaces it).
    connection: Arc<Mutex<Option<Connection>>>,
}

#[derive(Clone)]
struct Connection {
    coordinator: Coordinator,
    sessions: Arc<Sessions>,
}

/// The v2 implementation for the protocol router.
pub(crate) fn agent(state: Arc<AgentState>) -> impl ConnectTo<Client> + 'static {
    let agent = V2Agent { state, connection: Arc::new(Mutex::new(None)) };
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
    let builder = Agent.v2().name("zcode-acp");
    let builder = request!(builder, initialize);
    let builder = request!(builder, login);
    let builder = request!(builder, logout);
    let builder = request!(builder, new_session);
    let builder = request!(builder, resume_session);
    let builder = request!(builder, fork_session);
    let builder = request!(builder, list_sessions);
    let builder = request!(builder, close_session);
    let builder = request!(builder, set_config_option);
    let builder = request!(builder, prompt);
    builder.on_receive_notification(
        async move |notification: v2::CancelSessionNotification, _cx| {
            agent.cancel(notification);
            Ok(())
        },
        on_receive_notification!(),
    )
}

impl V2Agent {
    fn connection(&self) -> Result<Connection, Error> {
        self.connection.lock().unwrap().clone().ok_or_else(|| {
            Error::new(ErrorCode::INVALID_REQUEST, "initialize must complete before this request")
        })
    }

    fn initialize(
        &self,
        request: v2::InitializeRequest,
        responder: Responder<v2::InitializeResponse>,
        cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let response = capabilities::initialize_response(
            &request.capabilities,
            &self.state.config.version,
            &self.state.offers(),
        );
        let sessions = Arc::new(Sessions::new(cx, connection_nonce()));
        let client =
            Arc::new(V2Client { sessions: sessions.clone(), flow: self.state.config.flow.clone() });
        let coordinator = self
            .state
            .start_coordinator(client, capabilities::client_features(&request.capabilities));
        // v2 lets a client repeat `initialize` before its first other request (the SDK
        // enforces the window); the latest one stands. Nothing has started by then.
        *self.connection.lock().unwrap() = Some(Connection { coordinator, sessions });
        tracing::info!(target: LOG, protocol = 2, "initialized");
        responder.respond(response)
    }

    /// `auth/login` with the terminal method: confirms that the login the client ran has
    /// completed (terminal methods are run by the client, not by this request).
    fn login(
        &self,
        request: v2::LoginAuthRequest,
        responder: Responder<v2::LoginAuthResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let account = self.state.account.clone();
        answer("auth/login", responder, async move {
            confirm_login(account, &request.method_id.0)
                .await
                .map(|()| v2::LoginAuthResponse::new())
        })
    }

    fn logout(
        &self,
        _request: v2::LogoutAuthRequest,
        responder: Responder<v2::LogoutAuthResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let account = self.state.account.clone();
        answer("auth/logout", responder, async move {
            account.logout().await.map(|()| v2::LogoutAuthResponse::new()).map_err(Into::into)
        })
    }

    fn new_session(
        &self,
        request: v2::NewSessionRequest,
        responder: Responder<v2::NewSessionResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let connection = self.connection()?;
        let request = match convert::new_session(&request) {
            Ok(request) => request,
            Err(error) => return responder.respond_with_error(error),
        };
        tokio::spawn(async move {
            let opened = match connection.coordinator.new_session(request).await {
                Ok((response, bound)) => {
                    let id = v2::SessionId::new(response.session_id.0.to_string());
                    let conversation = connection.sessions.opening(&id);
                    let options = {
                        let mut state = conversation.lock();
                        state.translator.set_config(response.modes, response.config_options);
                        state.translator.config_options()
                    };
                    match options {
                        Ok(options) => {
                            connection.sessions.opened(&conversation);
                            Ok((v2::NewSessionResponse::new(id).config_options(options), bound))
                        }
                        Err(error) => {
                            connection.sessions.forget(&conversation);
                            Err(convert::internal(error))
                        }
                    }
                }
                Err(error) => Err(error.into()),
            };
            respond_then_start("session/new", responder, opened);
        });
        Ok(())
    }

    /// `session/resume`: without `replayFrom` v1's resume; from the start, v1's load (the
    /// history replays, then `replay_complete`). Either way the current state (idle) is sent
    /// before the answer.
    fn resume_session(
        &self,
        request: v2::ResumeSessionRequest,
        responder: Responder<v2::ResumeSessionResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let connection = self.connection()?;
        let replay = match &request.replay_from {
            None => false,
            Some(v2::ReplayFrom::Start(_)) => true,
            Some(other) => {
                let error = Error::invalid_params().data(format!(
                    "replayFrom {}: only {{\"type\":\"start\"}} is supported",
                    translate::to_value(other)
                ));
                return responder.respond_with_error(error);
            }
        };
        tokio::spawn(async move {
            let result = resume(&connection, request, replay).await;
            respond_then_start("session/resume", responder, result);
        });
        Ok(())
    }

    /// `session/fork` (unstable): the new session's history replays like a resume from the
    /// start (then `replay_complete`), and its state (idle) comes before the answer.
    fn fork_session(
        &self,
        request: v2::ForkSessionRequest,
        responder: Responder<v2::ForkSessionResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let connection = self.connection()?;
        let request = match convert::fork_session(&request) {
            Ok(request) => request,
            Err(error) => return responder.respond_with_error(error),
        };
        tokio::spawn(async move {
            let result = fork(&connection, request).await;
            respond_then_start("session/fork", responder, result);
        });
        Ok(())
    }

    fn list_sessions(
        &self,
        request: v2::ListSessionsRequest,
        responder: Responder<v2::ListSessionsResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let connection = self.connection()?;
        answer("session/list", responder, async move {
            let request = convert::list_sessions(&request)?;
            let response = connection.coordinator.list_sessions(request).await?;
            convert::list_response(&response)
        })
    }

    fn close_session(
        &self,
        request: v2::CloseSessionRequest,
        responder: Responder<v2::CloseSessionResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let connection = self.connection()?;
        answer("session/close", responder, async move {
            connection.sessions.close(&connection.coordinator, &request.session_id).await
        })
    }

    /// `session/set_config_option`: the mode goes to the coordinator's `set_mode`, the rest
    /// to its `set_config_option`; the answer is the whole list.
    fn set_config_option(
        &self,
        request: v2::SetSessionConfigOptionRequest,
        responder: Responder<v2::SetSessionConfigOptionResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let connection = self.connection()?;
        answer("session/set_config_option", responder, async move {
            let id = &request.session_id;
            let conversation = connection.sessions.get(&id.0).ok_or_else(|| not_found(id))?;
            let is_mode = conversation.lock().translator.is_mode_option(&request.config_id.0);
            let v1_id = agent_client_protocol::v1::schema::SessionId::new(id.0.to_string());
            if is_mode {
                let mode = convert::value_id(&request)?;
                let v1_request = agent_client_protocol::v1::schema::SetSessionModeRequest::new(
                    v1_id,
                    mode.clone(),
                );
                connection.coordinator.set_mode(v1_request).await?;
                conversation.lock().translator.set_current_mode(&mode);
            } else {
                let response = connection
                    .coordinator
                    .set_config_option(convert::set_config_option(&request)?)
                    .await?;
                conversation.lock().translator.set_config(None, Some(response.config_options));
            }
            let options =
                conversation.lock().translator.config_options().map_err(convert::internal)?;
            Ok(v2::SetSessionConfigOptionResponse::new(options))
        })
    }

    fn prompt(
        &self,
        request: v2::PromptRequest,
        responder: Responder<v2::PromptResponse>,
        _cx: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let connection = self.connection()?;
        // Here, in the dispatch loop: a `session/cancel` that follows the prompt on the wire
        // is then handled after it.
        connection.sessions.prompt(&connection.coordinator, request, responder);
        Ok(())
    }

    fn cancel(&self, notification: v2::CancelSessionNotification) {
        if let Ok(connection) = self.connection() {
            connection.sessions.cancel(&connection.coordinator, &notification.session_id);
        }
    }
}

async fn resume(
    connection: &Connection,
    request: v2::ResumeSessionRequest,
    replay: bool,
) -> Result<(v2::ResumeSessionResponse, BoundSession), Error> {
    let sessions = &connection.sessions;
    let conversation = sessions.opening(&request.session_id);
    let opened = if replay {
        match convert::load_session(&request) {
            Ok(load) => connection
                .coordinator
                .load_session(load)
                .await
                .map(|(response, bound)| ((response.modes, response.config_options), bound)),
            Err(error) => {
                sessions.forget(&conversation);
                return Err(error);
            }
        }
    } else {
        match convert::resume_session(&request) {
            Ok(resume) => connection
                .coordinator
                .resume_session(resume)
                .await
                .map(|(response, bound)| ((response.modes, response.config_options), bound)),
            Err(error) => {
                sessions.forget(&conversation);
                return Err(error);
            }
        }
    };
    let ((modes, options), bound) = match opened {
        Ok(opened) => opened,
        Err(error) => {
            sessions.forget(&conversation);
            return Err(error.into());
        }
    };
    let options = {
        let mut state = conversation.lock();
        state.translator.set_config(modes, options);
        state.translator.end_message();
        state.translator.config_options()
    };
    if replay {
        sessions.send(&conversation.id, translate::replay_complete());
    }
    let idle = v2::StateUpdate::Idle(v2::IdleStateUpdate::new());
    sessions.send(&conversation.id, v2::SessionUpdate::StateUpdate(idle));
    sessions.opened(&conversation);
    let options = options.map_err(convert::internal)?;
    Ok((v2::ResumeSessionResponse::new().config_options(options), bound))
}

async fn fork(
    connection: &Connection,
    request: agent_client_protocol::v1::schema::ForkSessionRequest,
) -> Result<(v2::ForkSessionResponse, BoundSession), Error> {
    let sessions = &connection.sessions;
    let forked = connection.coordinator.fork_session(request).await?;
    let id = v2::SessionId::new(forked.session_id().0.to_string());
    // Shown from its first replayed update on.
    let conversation = sessions.opening(&id);
    let (response, bound) = match forked.load().await {
        Ok(loaded) => loaded,
        Err(error) => {
            sessions.forget(&conversation);
            return Err(error.into());
        }
    };
    let options = {
        let mut state = conversation.lock();
        state.translator.set_config(response.modes, response.config_options);
        state.translator.end_message();
        state.translator.config_options()
    };
    sessions.send(&conversation.id, translate::replay_complete());
    let idle = v2::StateUpdate::Idle(v2::IdleStateUpdate::new());
    sessions.send(&conversation.id, v2::SessionUpdate::StateUpdate(idle));
    sessions.opened(&conversation);
    let options = options.map_err(convert::internal)?;
    Ok((v2::ForkSessionResponse::new(id).config_options(options), bound))
}

/// Answers with the session, then lets its updates flow: the response names the session.
fn respond_then_start<T: JsonRpcResponse>(
    method: &'static str,
    responder: Responder<T>,
    result: Result<(T, BoundSession), Error>,
) {
    match result {
        Ok((response, bound)) => {
            let _ = responder.respond(response);
            bound.start();
        }
        Err(error) => {
            tracing::warn!(target: LOG, method, code = error.code.value(), message = %error.message, "request failed");
            let _ = responder.respond_with_error(error);
        }
    }
}

/// Unique per connection, for message ids.
fn connection_nonce() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}
