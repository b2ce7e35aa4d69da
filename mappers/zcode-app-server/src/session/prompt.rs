//! A prompt turn: the prompt as the one text ZCode takes, sent as V4 `sendText` (or legacy
//! `session/send`), the session resumed and the prompt sent once more when ZCode evicted its
//! runtime; cancel (V4 `stop`, else `session/stop`) and the turn's end.

use serde_json::{Value, json};
use zcode_contract::{ErrorKind, MapperError, NativeReply, NativeRequest, Step};
use zcode_mapper_sdk::acp::prompt::{
    Block, Contents, media_attachment, read_blocks, resource_attachment,
};
use zcode_mapper_sdk::json::{invalid_params, protocol};
use zcode_v4::command;

use super::{AppServerSession, Op, PromptStage, done, request, wait};
use crate::connection::{ok_body, workspace_ref};
use crate::events;
use crate::wire::acp_params;

/// ZCode refused the prompt because the session has no resident runtime (it was evicted):
/// `-32004` on the legacy path, `rejected` / `proto.sessionNotFound` over V4.
fn not_active(body: &Result<Value, MapperError>) -> bool {
    match body {
        Ok(ack) => {
            ack.get("status").and_then(Value::as_str) == Some("rejected")
                && ack.get("reasonCode").and_then(Value::as_str) == Some("proto.sessionNotFound")
        }
        Err(error) => error.kind == ErrorKind::NotFound,
    }
}

/// `session/send` answered with a plain string: a refusal in ZCode's words, not an acceptance.
/// A live record saw it when a new process resumed an old session whose stored model no longer
/// resolves ("ZCode Protocol v1 (app-server stdio): live verification record", Desktop 3.12.3 /
/// CLI 0.16.5, 2026-09); no turn starts, so the prompt must not wait for one.
fn refused(reason: &str) -> MapperError {
    MapperError::new(ErrorKind::Native, format!("ZCode refused the prompt: {reason}"))
}

/// The prompt as ZCode's Agent takes it: one text, and the attachments of `session/send`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct NativePrompt {
    pub text: String,
    /// Legacy attachments (`{kind, filename, mimeType, sizeBytes, dataBase64}`), built by the
    /// SDK as for the task protocol's `sendPrompt`.
    pub attachments: Vec<Value>,
}

/// Text, links and embedded text become the text; images, audio and embedded binary resources
/// become `session/send` attachments of kind `image`, `audio` and `file` (reference APP §4.1
/// `session/send`: "Attachments: `{kind:"image", filename, mimeType, sizeBytes?, dataBase64?,
/// localPath?}` … `kind:"file"` … `kind:"audio"`").
fn native_prompt(params: &Value) -> Result<NativePrompt, MapperError> {
    let blocks = params
        .get("prompt")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid_params("prompt is missing"))?;
    let mut parts = Vec::new();
    let mut attachments = Vec::new();
    for block in read_blocks(blocks)? {
        match block {
            Block::Text(text) => parts.push(text),
            Block::Link(link) => parts.push(format!("[{}]({})", link.name, link.uri)),
            Block::Resource(resource) => match &resource.contents {
                Contents::Text(text) => {
                    parts.push(format!("<resource uri=\"{}\">\n{text}\n</resource>", resource.uri))
                }
                Contents::Blob(_) => attachments.push(resource_attachment(&resource)?),
            },
            Block::Image(image) => attachments.push(media_attachment(&image, "image")?),
            Block::Audio(audio) => attachments.push(media_attachment(&audio, "audio")?),
        }
    }
    let text = parts.join("\n\n");
    if text.trim().is_empty() && attachments.is_empty() {
        return Err(invalid_params("The prompt has no text"));
    }
    Ok(NativePrompt { text, attachments })
}

impl AppServerSession {
    /// A prompt: sent at once; the turn's content comes as events.
    pub(super) fn begin_prompt(
        &mut self,
        op_id: u64,
        params: &str,
        first: u64,
    ) -> Result<Step, MapperError> {
        let prompt = native_prompt(&acp_params(params)?)?;
        let sid = self.sid()?.to_string();
        self.running = true;
        self.cancelled = false;
        self.usage = None;
        self.pending_terminal = None;
        self.tools.clear();
        let send = self.send_prompt(&sid, &prompt, first);
        self.ops.insert(op_id, Op::Prompt { prompt, stage: PromptStage::Sent });
        Ok(wait(vec![send]))
    }

    pub(super) fn cancel(&mut self, op_id: u64, first: u64) -> Result<Step, MapperError> {
        let sid = self.sid()?.to_string();
        self.cancelled = true;
        self.ops.insert(op_id, Op::Cancel);
        // `session/stop` only aborts the current model request; the V4 stop is what the
        // Desktop's stop button sends (reference APP §8.2).
        Ok(wait(vec![if self.v4.active() {
            request(first, "v4/command", self.v4.command(&sid, "stop", json!({}), first))
        } else {
            request(first, "session/stop", json!({"sessionId": sid}))
        }]))
    }

    /// The turn is over: its usage, and nothing of it kept.
    pub(super) fn finish_turn(&mut self) -> Result<Step, MapperError> {
        self.running = false;
        self.tools.clear();
        self.conversation.unwatch();
        self.pending_terminal = None;
        Ok(done(events::acp_usage(self.usage.take().as_ref()), Vec::new()))
    }

    /// The prompt to ZCode: V4 `sendText` where the session has V4, else `session/send`. A
    /// prompt with attachments always goes by `session/send`, which every Desktop Agent (3.14
    /// to 4.0) takes them on inline: V4 `sendText` takes only uploaded attachment refs, and the
    /// app-server's upload (`v4/attachment/begin|chunk|commit`, reference APP §4.4) has no
    /// public parameter shape. Such a turn has no command id: the conversation adopts the
    /// running turn whose header names none.
    pub(super) fn send_prompt(
        &mut self,
        sid: &str,
        prompt: &NativePrompt,
        first: u64,
    ) -> NativeRequest {
        if self.v4.active() && prompt.attachments.is_empty() {
            let command = self.v4.command(
                sid,
                "sendText",
                json!({"text": prompt.text, "requestedDelivery": "startNow"}),
                first,
            );
            // ZCode attributes the turn to this command (`turnHeader.sourceCommandId`).
            self.conversation.watch(command["commandId"].as_str().map(str::to_string));
            return request(first, "v4/command", command);
        }
        if self.v4.active() {
            self.conversation.watch(None);
        }
        let mut params = json!({"sessionId": sid, "content": prompt.text});
        if !prompt.attachments.is_empty() {
            params["attachments"] = json!(prompt.attachments);
        }
        request(first, "session/send", params)
    }

    /// The prompt operation after a reply: done when ZCode accepted it; an evicted session is
    /// resumed and subscribed again, then the prompt is sent once more.
    pub(super) fn prompt_step(
        &mut self,
        op_id: u64,
        prompt: NativePrompt,
        stage: PromptStage,
        reply: Option<&NativeReply>,
        first: u64,
    ) -> Result<Step, MapperError> {
        let reply = reply.ok_or_else(|| protocol("prompt resumed without a reply"))?;
        let sid = self.sid()?.to_string();
        let next = |this: &mut Self, stage, req| {
            this.ops.insert(op_id, Op::Prompt { prompt: prompt.clone(), stage });
            Ok(wait(vec![req]))
        };
        match stage {
            PromptStage::Sent | PromptStage::Resent => {
                let body = ok_body(&reply.body, "prompt");
                if stage == PromptStage::Sent && not_active(&body) {
                    let workspace = workspace_ref(&self.workspace);
                    let params =
                        json!({"sessionId": sid, "workspace": workspace, "mcpServers": self.mcp});
                    return next(
                        self,
                        PromptStage::Resume,
                        request(first, "session/resume", params),
                    );
                }
                let accepted = body.and_then(|body| match body {
                    Value::String(reason) => Err(refused(&reason)),
                    body if body.get("status").is_some() => command::accepted(&body).map(|_| ()),
                    Value::Object(_) => Ok(()),
                    other => Err(protocol(format!(
                        "ZCode answered the prompt with neither an acceptance nor a reason: {other}"
                    ))),
                });
                match accepted {
                    Ok(()) => Ok(done(json!({}), Vec::new())),
                    Err(error) => Err(error),
                }
            }
            PromptStage::Resume => {
                let state = ok_body(&reply.body, "session/resume")?;
                self.settings(&state);
                let params = json!({"sessionId": sid, "deliveryKind": "desktop-continuous", "includeSnapshot": false});
                next(self, PromptStage::Subscribe, request(first, "session/subscribe", params))
            }
            PromptStage::Subscribe => {
                let result = ok_body(&reply.body, "session/subscribe")?;
                self.event_seq = super::subscribed_seq(&result);
                if !self.v4.active() {
                    let send = self.send_prompt(&sid, &prompt, first);
                    return next(self, PromptStage::Resent, send);
                }
                let params = json!({"topic": format!("conversation/{sid}"), "connectionId": self.v4.connection_id, "clientMode": "desktop-continuous"});
                next(
                    self,
                    PromptStage::V4Subscribe,
                    request(first, "v4/conversation/subscribe", params),
                )
            }
            PromptStage::V4Subscribe => {
                let result = ok_body(&reply.body, "v4/conversation/subscribe")?;
                let ack =
                    result.get("ack").ok_or_else(|| protocol("v4 subscribe without an ack"))?;
                self.v4.resubscribed(
                    ack.get("subscriptionId").and_then(Value::as_str).map(str::to_string),
                    ack.get("logEpoch").and_then(Value::as_str).map(str::to_string),
                );
                let send = self.send_prompt(&sid, &prompt, first);
                next(self, PromptStage::Resent, send)
            }
        }
    }
}
