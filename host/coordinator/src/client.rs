//! What the coordinator needs from the ACP client: send updates and ask questions.
//!
//! The ACP server implements this over the SDK connection; tests implement it with a script.

use agent_client_protocol::BoxFuture;
use agent_client_protocol::v1::schema::{
    CreateElicitationRequest, CreateElicitationResponse, RequestPermissionRequest,
    RequestPermissionResponse, SessionId, SessionNotification,
};

use crate::acp_json::Update;

/// Why the client gave no usable answer to a request.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct ClientError(pub String);

pub trait ClientPort: Send + Sync + 'static {
    /// Queue a `session/update` notification (ordered with every other message we send).
    fn update(&self, notification: SessionNotification) -> Result<(), ClientError>;
    /// Queue `session/update` notifications for `session`, in order, as [`update`](Self::update)
    /// does. A port may write a text chunk from its parts instead of the schema types.
    fn updates(&self, session: &SessionId, updates: Vec<Update>) -> Result<(), ClientError> {
        send_each(self, session, updates)
    }
    /// `session/request_permission`. Dropping the future abandons the request (the SDK then
    /// sends `$/cancel_request`).
    fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> BoxFuture<'static, Result<RequestPermissionResponse, ClientError>>;
    /// `elicitation/create` (form mode).
    fn elicit(
        &self,
        request: CreateElicitationRequest,
    ) -> BoxFuture<'static, Result<CreateElicitationResponse, ClientError>>;
    /// Resolves once everything queued before it has been written to the client (or can no
    /// longer be): how a session keeps its streamed output bounded when the client reads
    /// slowly. A port that writes synchronously resolves at once.
    fn written(&self) -> BoxFuture<'static, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// Sends `updates` one by one through [`ClientPort::update`], as the schema types: the default
/// of [`ClientPort::updates`], for a port that may also write them another way.
pub fn send_each(
    port: &(impl ClientPort + ?Sized),
    session: &SessionId,
    updates: Vec<Update>,
) -> Result<(), ClientError> {
    updates.into_iter().try_for_each(|update| {
        port.update(SessionNotification::new(session.clone(), update.into_typed()))
    })
}
