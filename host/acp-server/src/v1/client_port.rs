//! The coordinator's view of the ACP client, over the SDK connection.

use std::sync::Arc;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateElicitationRequest, CreateElicitationResponse, RequestPermissionRequest,
    RequestPermissionResponse, SessionNotification,
};
use agent_client_protocol::{BoxFuture, Client};
use zcode_coordinator::{ClientError, ClientPort};

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
