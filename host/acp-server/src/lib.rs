//! The ACP agent over the official SDK, v1 and v2 on one connection type: `initialize`
//! chooses the version per connection (the SDK's protocol router), and both versions drive
//! the same session coordinator and mappers.
//!
//! - A client asking for v1 (or anything below 2, or not asking at all) gets the v1 agent
//!   ([`v1`]) exactly as it was before v2 existed.
//! - A client asking for 2 or newer gets v2 ([`v2`]): the highest version this agent has
//!   that is not above the request.
//!
//! The coordinator emits v1 schema types; the v2 agent translates them at this edge.

pub mod stdio;
mod v1;
mod v2;

use std::sync::{Arc, Mutex};

use agent_client_protocol::{
    Agent, BoxFuture, ConnectTo, Error, JsonRpcResponse, Protocol, Responder,
};
use zcode_contract::ClientFeatures;
use zcode_coordinator::{
    ClientPort, Coordinator, CoordinatorConfig, CoordinatorError, HostLauncher,
};

const LOG: &str = "zcode_acp::acp";

/// The terminal auth method: the client runs `zcode-acp login`, which runs ZCode's own login.
pub const LOGIN_METHOD_ID: &str = "zcode-login";

/// ZCode account operations behind `authenticate` and `logout` (v2: `auth/login`,
/// `auth/logout`).
pub trait Account: Send + Sync + 'static {
    /// Whether ZCode has credentials (never reads them).
    fn signed_in(&self) -> BoxFuture<'static, Result<bool, CoordinatorError>>;
    /// Runs ZCode's own logout.
    fn logout(&self) -> BoxFuture<'static, Result<(), CoordinatorError>>;
}

pub struct ServerConfig {
    pub version: String,
    /// Coordinator settings; the client features are filled in at `initialize`.
    pub coordinator: CoordinatorConfig,
    /// The transport's write marks ([`stdio::transport`]): sessions then keep what the client
    /// has not read yet bounded. `None` for a transport that does not resolve marks.
    pub flow: Option<Arc<stdio::Flow>>,
}

/// What both protocol versions share on one connection.
struct AgentState {
    launcher: Arc<dyn HostLauncher>,
    account: Arc<dyn Account>,
    config: ServerConfig,
    /// Set by `initialize`; shut down when the connection ends.
    coordinator: Mutex<Option<Coordinator>>,
}

impl AgentState {
    fn coordinator(&self) -> Result<Coordinator, Error> {
        self.coordinator.lock().unwrap().clone().ok_or_else(|| {
            Error::new(
                agent_client_protocol::ErrorCode::INVALID_REQUEST,
                "initialize must complete before this request",
            )
        })
    }

    /// The optional ACP methods `initialize` advertises (see [`HostLauncher::offers`]).
    fn offers(&self) -> Vec<String> {
        self.launcher.offers()
    }

    fn initialized(&self) -> bool {
        self.coordinator.lock().unwrap().is_some()
    }

    /// The connection's coordinator, talking to the client through `client`. Replaces one
    /// from an earlier `initialize` (v2 allows repeating it before any other request, so
    /// nothing was started by the one replaced).
    fn start_coordinator(
        &self,
        client: Arc<dyn ClientPort>,
        features: ClientFeatures,
    ) -> Coordinator {
        let mut config = self.config.coordinator.clone();
        config.client = features;
        let coordinator = Coordinator::new(self.launcher.clone(), client, config);
        *self.coordinator.lock().unwrap() = Some(coordinator.clone());
        coordinator
    }
}

/// Serves one ACP connection until the client closes it, then shuts everything down (every
/// open prompt answered `cancelled`, the host child stopped with no process left behind).
pub async fn serve(
    transport: impl ConnectTo<Agent> + 'static,
    launcher: Arc<dyn HostLauncher>,
    account: Arc<dyn Account>,
    config: ServerConfig,
) -> Result<(), Error> {
    let state = Arc::new(AgentState { launcher, account, config, coordinator: Mutex::new(None) });
    let result = Agent
        .protocol_router()
        .with_v1(v1::agent(state.clone()))
        .with_v2(v2::agent(state.clone()))
        .connect_to(transport)
        .await;
    tracing::info!(target: LOG, "client closed the connection");
    let coordinator = state.coordinator.lock().unwrap().take();
    if let Some(coordinator) = coordinator {
        coordinator.shutdown().await;
    }
    result
}

/// Runs `work` off the dispatch loop and answers the request with its result (either
/// version's responder).
fn answer<T, P, F>(method: &'static str, responder: Responder<T, P>, work: F) -> Result<(), Error>
where
    T: JsonRpcResponse + Send + 'static,
    P: Protocol,
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

/// `authenticate` (v2: `auth/login`) with the terminal method: confirms that the login the
/// client ran has completed (terminal methods are run by the client, not by the request).
async fn confirm_login(account: Arc<dyn Account>, method_id: &str) -> Result<(), Error> {
    if method_id != LOGIN_METHOD_ID {
        return Err(Error::new(
            agent_client_protocol::ErrorCode::INVALID_PARAMS,
            format!("Unknown auth method: {method_id}"),
        ));
    }
    match account.signed_in().await {
        Ok(true) => Ok(()),
        Ok(false) => {
            Err(CoordinatorError::AuthRequired("ZCode login has not completed".into()).into())
        }
        Err(error) => Err(error.into()),
    }
}
