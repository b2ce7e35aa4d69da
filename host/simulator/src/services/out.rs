//! The Services Server's messages on the shared stdout writer (`common/output.rs`): one
//! channel message `[kind, id?]` + body in a Regular transport frame.

use super::ipc::message::encode_response;
use super::ipc::transport::encode_frame;
use super::ipc::value::RpcValue;
use crate::common::output::Output;

pub trait Messages {
    fn message(&self, kind: i32, id: Option<i64>, body: &RpcValue);
}

impl Messages for Output {
    fn message(&self, kind: i32, id: Option<i64>, body: &RpcValue) {
        self.bytes(encode_frame(&encode_response(kind, id, body)));
    }
}
