//! The coordinator's view of a v2 client: what it sends in v1 is translated here, on the way
//! out, under the session's lock (so the prompt's acknowledgement always comes first).

use std::sync::Arc;

use agent_client_protocol::BoxFuture;
use agent_client_protocol::v1::schema as v1;
use zcode_coordinator::{ClientError, ClientPort};

use super::sessions::Sessions;
use super::translate;
use crate::LOG;
use crate::stdio::Flow;

pub struct V2Client {
    pub sessions: Arc<Sessions>,
    pub flow: Option<Arc<Flow>>,
}

impl ClientPort for V2Client {
    fn update(&self, notification: v1::SessionNotification) -> Result<(), ClientError> {
        let id = notification.session_id.0.to_string();
        let shown = self.sessions.showing(&id, |sessions, id, state| {
            let updates = state.translator.update(notification.update)?;
            for update in updates {
                sessions.send(id, update);
            }
            Ok::<_, translate::TranslateError>(())
        });
        match shown {
            Some(Ok(())) => Ok(()),
            Some(Err(error)) => {
                tracing::warn!(target: LOG, session = %id, %error, "update not shown");
                Err(ClientError(error.to_string()))
            }
            // Closed on this connection (or never shown here): nothing more is sent for it.
            None => Err(ClientError(format!("session {id} is not open on this connection"))),
        }
    }

    fn request_permission(
        &self,
        request: v1::RequestPermissionRequest,
    ) -> BoxFuture<'static, Result<v1::RequestPermissionResponse, ClientError>> {
        let id = request.session_id.0.to_string();
        let asked =
            self.sessions.showing(&id, |_, _, state| state.translator.permission_request(&request));
        let asked = match asked {
            Some(Ok(asked)) => asked,
            Some(Err(error)) => return refused(error.to_string()),
            None => return refused(format!("session {id} is not open on this connection")),
        };
        // Counted before the request goes out, and uncounted however the future ends.
        let guard = self.sessions.asking(&id);
        // Dropping the returned future drops the request, which makes the SDK send
        // `$/cancel_request`: the client stops asking the user.
        let sent = self.sessions.cx().send_request(asked);
        Box::pin(async move {
            let response = sent.block_task().await.map_err(|e| ClientError(e.message))?;
            if let Some(guard) = guard {
                guard.answered();
            }
            translate::permission_response(response).map_err(|e| ClientError(e.to_string()))
        })
    }

    fn elicit(
        &self,
        request: v1::CreateElicitationRequest,
    ) -> BoxFuture<'static, Result<v1::CreateElicitationResponse, ClientError>> {
        let id = match request.scope() {
            v1::ElicitationScope::Session(scope) => scope.session_id.0.to_string(),
            other => return refused(format!("an elicitation outside a session: {other:?}")),
        };
        let asked = self.sessions.showing(&id, |_, _, _| translate::elicitation_request(&request));
        let asked = match asked {
            Some(Ok(asked)) => asked,
            Some(Err(error)) => return refused(error.to_string()),
            None => return refused(format!("session {id} is not open on this connection")),
        };
        let guard = self.sessions.asking(&id);
        let sent = self.sessions.cx().send_request(asked);
        Box::pin(async move {
            let response = sent.block_task().await.map_err(|e| ClientError(e.message))?;
            if let Some(guard) = guard {
                guard.answered();
            }
            translate::elicitation_response(response).map_err(|e| ClientError(e.to_string()))
        })
    }

    fn written(&self) -> BoxFuture<'static, ()> {
        match &self.flow {
            Some(flow) => flow.mark(|mark| self.sessions.cx().send_notification(mark)),
            None => Box::pin(std::future::ready(())),
        }
    }
}

fn refused<T: Send + 'static>(why: String) -> BoxFuture<'static, Result<T, ClientError>> {
    Box::pin(async move { Err(ClientError(why)) })
}
