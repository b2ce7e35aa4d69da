//! A prompt's attachments uploaded to the Services Server one after the other
//! (`attachmentBeginV4`, its chunks, `attachmentCommitV4`: `zcode_v4::attachment`), before the
//! prompt's commands are sent with `sendText` naming the committed references.

use std::collections::VecDeque;

use serde_json::{Value, json};
use zcode_contract::MapperError;
use zcode_mapper_sdk::json::internal;
use zcode_v4::attachment::{self, Upload};

use crate::rpc::Call;
use crate::session::ServicesSession;
use crate::session::command::Command;
use crate::session::ops::{Finish, Next, Stage, bound, commands, send};

/// A prompt's attachments being uploaded one after the other, before its commands are sent.
pub(in crate::session) struct Uploading {
    waiting: VecDeque<Upload>,
    /// The upload in flight, its id and the step whose answer is awaited.
    current: Option<(Upload, String, UploadStep)>,
    /// The `sendText` attachments of the committed uploads, in prompt order.
    attachments: Vec<Value>,
    steps: Vec<Command>,
    finish: Finish,
}

#[derive(Clone, Copy)]
enum UploadStep {
    Begin,
    Chunk(usize),
    Commit,
}

impl Uploading {
    pub(super) fn new(uploads: Vec<Upload>, steps: Vec<Command>, finish: Finish) -> Self {
        Uploading { waiting: uploads.into(), current: None, attachments: Vec::new(), steps, finish }
    }
}

/// The next upload's `begin`, or, all committed, the commands with `sendText` naming them.
pub(super) fn next(
    session: &mut ServicesSession,
    mut uploading: Uploading,
) -> Result<Next, MapperError> {
    let Some(upload) = uploading.waiting.pop_front() else {
        let mut steps = uploading.steps;
        for step in steps.iter_mut().filter(|step| step.kind == "sendText") {
            step.payload["attachments"] = json!(uploading.attachments);
        }
        return commands(session, steps, uploading.finish);
    };
    let upload_id = session.follow.state.command_id();
    let params = upload.begin(&upload_id);
    uploading.current = Some((upload, upload_id, UploadStep::Begin));
    call(session, uploading, "attachmentBeginV4", params)
}

fn call(
    session: &ServicesSession,
    uploading: Uploading,
    method: &'static str,
    mut params: Value,
) -> Result<Next, MapperError> {
    let bound = bound(session)?;
    params["workspacePath"] = json!(session.follow.state.workspace);
    params["sessionId"] = json!(bound.session_id);
    Ok(send(Stage::Upload(Box::new(uploading)), Call::agent(method, params)))
}

/// An upload step answered: the next chunk, the commit, or the next upload.
pub(super) fn answered(
    session: &mut ServicesSession,
    mut uploading: Uploading,
    result: Result<Value, MapperError>,
) -> Result<Next, MapperError> {
    let (upload, upload_id, step) =
        uploading.current.take().ok_or_else(|| internal("no attachment upload in flight"))?;
    let answer = result?;
    let next = match step {
        UploadStep::Begin => {
            attachment::begun(&answer, &upload_id)?;
            0
        }
        UploadStep::Chunk(index) => {
            attachment::chunked(&answer, index)?;
            index + 1
        }
        UploadStep::Commit => {
            let reference = attachment::committed(&answer)?;
            uploading.attachments.push(upload.attachment(&reference));
            return next(session, uploading);
        }
    };
    if next < upload.total_chunks() {
        let params = upload.chunk(&upload_id, next);
        uploading.current = Some((upload, upload_id, UploadStep::Chunk(next)));
        return call(session, uploading, "attachmentChunkV4", params);
    }
    let params = json!({"uploadId": upload_id});
    uploading.current = Some((upload, upload_id, UploadStep::Commit));
    call(session, uploading, "attachmentCommitV4", params)
}
