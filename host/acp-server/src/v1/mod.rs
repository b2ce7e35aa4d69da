//! The ACP v1 agent: `initialize` and capability advertising, and method routing to the
//! session coordinator.
//!
//! Every handler returns to the SDK's dispatch loop at once and does its work in a spawned
//! task (a handler that awaited a client answer would deadlock the loop). Each request is
//! answered exactly once: the responder is moved into the task and consumed on every path.

mod capabilities;
mod client_port;

use std::sync::Arc;

use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    AuthenticateRequest, AuthenticateResponse, CancelNotification, CloseSessionRequest,
    InitializeRequest, ListSessionsRequest, LoadSessionRequest, LogoutRequest, LogoutResponse,
    NewSessionRequest, PromptRequest, ResumeSessionRequest, SetSessionConfigOptionRequest,
    SetSessionModeRequest,
};
use agent_client_protocol::{
    Agent, Client, ConnectTo, Error, ErrorCode, JsonRpcResponse, on_receive_notification,
    on_receive_request,
};
use zcode_coordinator::CoordinatorError;

use crate::{AgentState, LOG, LOGIN_METHOD_ID};
use client_port::AcpClient;

/// Runs `work` off the dispatch loop and answers the request with its result.
fn answer<T, F>(method: &'static str, responder: Responder<T>, work: F) -> Result<(), Error>
where
    T: JsonRpcResponse + Send + 'static,
    F: Future<Output = Result<T, Error>> + Send + 'static,
{
    tokio::spawn(async move {
        let result = work.await;
        if let Err(error) = &result {
            tracing::warn!(target: LOG, method, code = error.code.value(), message = %error.message, "request failed");
        }
        let _ = responder.respond_with_result(result);
    });
    Ok(())
}

/// The v1 implementation for the protocol router: a handler per ACP method.
pub(crate) fn agent(state: Arc<AgentState>) -> impl ConnectTo<Client> + 'static {
    let s = state.clone();
    let builder = Agent.v1().name("zcode-acp").on_receive_request(
        async move |request: InitializeRequest, responder, cx| {
            let response =
                capabilities::initialize_response(&request.client_capabilities, &s.config.version);
            if s.initialized() {
                return responder.respond_with_error(Error::new(
                    ErrorCode::INVALID_REQUEST,
                    "the connection is already initialized",
                ));
            }
            let client = Arc::new(AcpClient::new(cx));
            s.start_coordinator(
                client,
                capabilities::client_features(&request.client_capabilities),
            );
            tracing::info!(target: LOG, client_version = ?request.protocol_version, "initialized");
            responder.respond(response)
        },
        on_receive_request!(),
    );

    let s = state.clone();
    let builder = builder.on_receive_request(
        async move |request: AuthenticateRequest, responder, _cx| {
            let account = s.account.clone();
            answer("authenticate", responder, async move {
                if request.method_id.0.as_ref() != LOGIN_METHOD_ID {
                    return Err(Error::new(
                        ErrorCode::INVALID_PARAMS,
                        format!("Unknown auth method: {}", request.method_id.0),
                    ));
                }
                match account.signed_in().await {
                    Ok(true) => Ok(AuthenticateResponse::new()),
                    Ok(false) => {
                        Err(CoordinatorError::AuthRequired("ZCode login has not completed".into())
                            .into())
                    }
                    Err(error) => Err(error.into()),
                }
            })
        },
        on_receive_request!(),
    );

    let s = state.clone();
    let builder = builder.on_receive_request(
        async move |_request: LogoutRequest, responder, _cx| {
            let account = s.account.clone();
            answer("logout", responder, async move {
                account.logout().await.map(|()| LogoutResponse::new()).map_err(Into::into)
            })
        },
        on_receive_request!(),
    );

    let s = state.clone();
    let builder = builder.on_receive_request(
        async move |request: NewSessionRequest, responder, _cx| {
            let coordinator = s.coordinator()?;
            tokio::spawn(async move {
                match coordinator.new_session(request).await {
                    Ok((response, bound)) => {
                        // The response names the session; only then may its updates flow.
                        let _ = responder.respond(response);
                        bound.start();
                    }
                    Err(error) => report("session/new", responder, error),
                }
            });
            Ok(())
        },
        on_receive_request!(),
    );

    let s = state.clone();
    let builder = builder.on_receive_request(
        async move |request: LoadSessionRequest, responder, _cx| {
            let coordinator = s.coordinator()?;
            tokio::spawn(async move {
                match coordinator.load_session(request).await {
                    Ok((response, bound)) => {
                        let _ = responder.respond(response);
                        bound.start();
                    }
                    Err(error) => report("session/load", responder, error),
                }
            });
            Ok(())
        },
        on_receive_request!(),
    );

    let s = state.clone();
    let builder = builder.on_receive_request(
        async move |request: ResumeSessionRequest, responder, _cx| {
            let coordinator = s.coordinator()?;
            tokio::spawn(async move {
                match coordinator.resume_session(request).await {
                    Ok((response, bound)) => {
                        let _ = responder.respond(response);
                        bound.start();
                    }
                    Err(error) => report("session/resume", responder, error),
                }
            });
            Ok(())
        },
        on_receive_request!(),
    );

    let s = state.clone();
    let builder = builder.on_receive_request(
        async move |request: ListSessionsRequest, responder, _cx| {
            let coordinator = s.coordinator()?;
            answer("session/list", responder, async move {
                coordinator.list_sessions(request).await.map_err(Into::into)
            })
        },
        on_receive_request!(),
    );

    let s = state.clone();
    let builder = builder.on_receive_request(
        async move |request: CloseSessionRequest, responder, _cx| {
            let coordinator = s.coordinator()?;
            answer("session/close", responder, async move {
                coordinator.close_session(request).await.map_err(Into::into)
            })
        },
        on_receive_request!(),
    );

    let s = state.clone();
    let builder = builder.on_receive_request(
        async move |request: SetSessionModeRequest, responder, _cx| {
            let coordinator = s.coordinator()?;
            answer("session/set_mode", responder, async move {
                coordinator.set_mode(request).await.map_err(Into::into)
            })
        },
        on_receive_request!(),
    );

    let s = state.clone();
    let builder = builder.on_receive_request(
        async move |request: SetSessionConfigOptionRequest, responder, _cx| {
            let coordinator = s.coordinator()?;
            answer("session/set_config_option", responder, async move {
                coordinator.set_config_option(request).await.map_err(Into::into)
            })
        },
        on_receive_request!(),
    );

    let s = state.clone();
    let builder = builder.on_receive_request(
        async move |request: PromptRequest, responder, _cx| {
            let coordinator = s.coordinator()?;
            // Queued here, in the dispatch loop: a `session/cancel` that follows the prompt on
            // the wire is then handled after it, never lost before it.
            let session_id = request.session_id.clone();
            let pending = match coordinator.prompt(request) {
                Ok(pending) => pending,
                Err(error) => {
                    report("session/prompt", responder, error);
                    return Ok(());
                }
            };
            // `$/cancel_request` naming this prompt cancels the turn like `session/cancel`;
            // the prompt still gets its one answer (`cancelled`).
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
        },
        on_receive_request!(),
    );

    let s = state;
    builder.on_receive_notification(
        async move |notification: CancelNotification, _cx| {
            if let Ok(coordinator) = s.coordinator() {
                coordinator.cancel(&notification.session_id);
            }
            Ok(())
        },
        on_receive_notification!(),
    )
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
