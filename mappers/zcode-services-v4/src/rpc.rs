//! The Services Server calls this mapper makes, as native requests, and how their replies are
//! read. Channel and method names: ZCode `packages/services/src/zcode-agent/zcodeAgent.ts`
//! (`IZCodeAgentService`) and `zcodeAgentConnectionScope.ts` @ 3.15.1; arguments are
//! positional, one object each (the Paseo plugin's usage, V4S §3).

use serde_json::Value;
use zcode_contract::{NativeRequest, NativeWrite};

use crate::ipc::message;
use zcode_mapper_sdk::json::canonical;

pub const AGENT: &str = "zcode-agent";
pub const FRAME_EVENT: &str = "onDynamicConversationFrame";

/// Default RPC timeout (the plugin's 30 s), commands 60 s, the V4 hello 10 s (V4S §2.3).
pub const RPC_TIMEOUT_MS: u32 = 30_000;
pub const COMMAND_TIMEOUT_MS: u32 = 60_000;
pub const HELLO_TIMEOUT_MS: u32 = 10_000;
/// Opening a session may start the Agent and restore a large session.
pub const OPEN_TIMEOUT_MS: u32 = 120_000;

/// One call on a channel.
#[derive(Clone, Debug)]
pub struct Call {
    pub channel: &'static str,
    pub method: &'static str,
    pub args: Vec<Value>,
    pub timeout_ms: u32,
}

impl Call {
    pub fn agent(method: &'static str, arg: Value) -> Self {
        Self { channel: AGENT, method, args: vec![arg], timeout_ms: RPC_TIMEOUT_MS }
    }

    /// A call without arguments.
    pub fn agent0(method: &'static str) -> Self {
        Self { channel: AGENT, method, args: Vec::new(), timeout_ms: RPC_TIMEOUT_MS }
    }

    pub fn timeout(mut self, timeout_ms: u32) -> Self {
        self.timeout_ms = timeout_ms;
        self
    }

    pub fn label(&self) -> String {
        format!("{}.{}", self.channel, self.method)
    }

    pub fn into_request(self, id: u64) -> NativeRequest {
        let args: Vec<String> = self.args.iter().map(canonical).collect();
        NativeRequest {
            id,
            bytes: message::call(id, self.channel, self.method, &args),
            label: self.label(),
            timeout_ms: self.timeout_ms,
        }
    }
}

/// The listen for a session's conversation frames: its id is the event route. ZCode keys the
/// routed event by workspace (`zcodeAgentConnectionScope.ts`, `routedEvent`); the session id
/// rides along as the plugin sends it.
pub fn listen_frames(id: u64, workspace: &str, session_id: &str) -> NativeRequest {
    let arg = serde_json::json!({"workspacePath": workspace, "sessionId": session_id});
    NativeRequest {
        id,
        bytes: message::listen(id, AGENT, FRAME_EVENT, &canonical(&arg)),
        label: format!("{AGENT}.{FRAME_EVENT}"),
        timeout_ms: 0,
    }
}

/// Ends the listen `listen_id`. A write, not a request: it names the listen's id and has no
/// id (or reply) of its own.
pub fn dispose_listen(listen_id: u64) -> NativeWrite {
    NativeWrite::new(format!("{AGENT}.{FRAME_EVENT}.dispose"), message::dispose(listen_id))
}

/// The route (event id) of a listen request id.
pub fn route(id: u64) -> String {
    id.to_string()
}

/// Replies read as JSON, and a native result that failed validation, named after its call.
pub use zcode_v4::follow::{invalid_result, reply_value};
