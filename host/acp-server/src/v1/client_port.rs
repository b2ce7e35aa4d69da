//! The coordinator's view of the ACP client, over the SDK connection.

use std::sync::Arc;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateElicitationRequest, CreateElicitationResponse, RequestPermissionRequest,
    RequestPermissionResponse, SessionId, SessionNotification,
};
use agent_client_protocol::{BoxFuture, Client};
use zcode_coordinator::{ClientError, ClientPort, Update, send_each};

use super::chunk_frames;
use crate::stdio::Flow;

pub struct AcpClient {
    cx: ConnectionTo<Client>,
    flow: Option<Arc<Flow>>,
}

impl AcpClient {
    pub fn new(cx: ConnectionTo<Client>, flow: Option<Arc<Flow>>) -> Self {
        Self { cx, flow }
    }
}

impl ClientPort for AcpClient {
    fn update(&self, notification: SessionNotification) -> Result<(), ClientError> {
        self.cx.send_notification(notification).map_err(|e| ClientError(e.message))
    }

    /// Text chunks are written out from their parts and go to stdout as one block per run of
    /// them; other updates go through the SDK, in between, in order.
    fn updates(&self, session: &SessionId, updates: Vec<Update>) -> Result<(), ClientError> {
        let Some(flow) = &self.flow else {
            return send_each(self, session, updates);
        };
        let mut block = String::new();
        let session_json = chunk_frames::session_json(session);
        let send_block = |block: &mut String| {
            if block.is_empty() {
                return Ok(());
            }
            flow.block(std::mem::take(block), |placeholder| self.cx.send_notification(placeholder))
                .map_err(|e| ClientError(e.message))
        };
        for update in updates {
            match update {
                Update::Text(chunk) => {
                    if !block.is_empty() {
                        block.push('\n');
                    }
                    chunk_frames::write(&mut block, &session_json, &chunk);
                }
                Update::Typed(update) => {
                    send_block(&mut block)?;
                    self.update(SessionNotification::new(session.clone(), *update))?;
                }
            }
        }
        send_block(&mut block)
    }

    fn request_permission(
        &self,
        request: RequestPermissionRequest,
    ) -> BoxFuture<'static, Result<RequestPermissionResponse, ClientError>> {
        // Dropping the returned future drops the request, which makes the SDK send
        // `$/cancel_request`: the client stops asking the user.
        let sent = self.cx.send_request(request);
        Box::pin(async move { sent.block_task().await.map_err(|e| ClientError(e.message)) })
    }

    fn elicit(
        &self,
        request: CreateElicitationRequest,
    ) -> BoxFuture<'static, Result<CreateElicitationResponse, ClientError>> {
        let sent = self.cx.send_request(request);
        Box::pin(async move { sent.block_task().await.map_err(|e| ClientError(e.message)) })
    }

    fn written(&self) -> BoxFuture<'static, ()> {
        match &self.flow {
            Some(flow) => flow.mark(|mark| self.cx.send_notification(mark)),
            None => Box::pin(std::future::ready(())),
        }
    }
}
