//! A scripted ZCode 3.11.2 host for driving a native mapper session through its operations:
//! every request the mapper writes gets a plausible reply, chosen by the native method.

use serde_json::{Value, json};
use zcode_contract::{
    ClientFeatures, Mapper, MapperError, MapperSession, NativeReply, OpResult, ReplyBody,
    SessionInit, SessionOp, Step,
};
use zcode_task_v1::TaskV1Mapper;

pub const WORKSPACE: &str = "/work/project";
pub const SESSION_ID: &str = "ses-7f3a";

/// One mapper session and the ids the core would hand out.
pub struct Driven {
    pub session: Box<dyn MapperSession>,
    next_op: u64,
    next_request: u64,
}

/// The outcome of one operation and the native methods it called.
pub struct Ran {
    pub outcome: Result<OpResult, MapperError>,
    pub methods: Vec<String>,
}

impl Driven {
    /// A session that has created its native session and subscribed to it.
    pub fn created() -> Driven {
        let init = SessionInit {
            workspace: WORKSPACE.to_string(),
            client: ClientFeatures { plan_operations: true, form_elicitation: true },
            facts: Default::default(),
        };
        let session = TaskV1Mapper.session(&init).expect("a native session never faults");
        let mut driven = Driven { session, next_op: 1, next_request: 1 };
        let create = json!({"cwd": WORKSPACE, "mcpServers": []}).to_string();
        let ran = driven.run(SessionOp::Create(create));
        assert!(ran.outcome.is_ok(), "setup: create failed: {:?}", ran.outcome);
        driven
    }

    pub fn prompt(&mut self) -> Ran {
        let prompt = json!({"sessionId": SESSION_ID,
                            "prompt": [{"type": "text", "text": "Fix the failing test"}]});
        self.run(SessionOp::Prompt(prompt.to_string()))
    }

    /// Runs `op` to its end, answering each native request as the host would.
    pub fn run(&mut self, op: SessionOp) -> Ran {
        let op_id = self.next_op;
        self.next_op += 1;
        let mut methods = Vec::new();
        let mut step = self.session.start(op_id, &op, self.next_request).expect("no fault");
        // An operation is a short exchange; a mapper that never finishes is a bug.
        for _ in 0..32 {
            let outgoing = match step {
                Step::Done(outcome) => return Ran { outcome, methods },
                Step::Wait(outgoing) => outgoing,
            };
            let Some(request) = outgoing.requests.first() else {
                // A step that only streamed updates (a page of history) goes on at once.
                assert!(!outgoing.updates.is_empty(), "{op:?} waits for nothing: {outgoing:?}");
                step = self.session.resume(op_id, None, self.next_request).expect("no fault");
                continue;
            };
            assert_eq!(
                request.id, self.next_request,
                "requests must use the ids handed out, in order"
            );
            assert_eq!(outgoing.requests.len(), 1, "one request at a time: {outgoing:?}");
            self.next_request += 1;
            let method = native_method(&request.bytes);
            let body = ReplyBody::Ok(reply_for(&method).to_string().into());
            methods.push(method);
            let reply = NativeReply { id: request.id, body };
            step = self.session.resume(op_id, Some(&reply), self.next_request).expect("no fault");
        }
        panic!("operation {op:?} did not finish within 32 native round trips: {methods:?}");
    }
}

/// `service.method` of a bridge call, or the bridge method itself.
fn native_method(bytes: &[u8]) -> String {
    let request: Value = serde_json::from_slice(bytes).expect("the mapper writes JSON requests");
    match request["method"].as_str() {
        Some("__call") => format!(
            "{}.{}",
            request["params"]["service"].as_str().unwrap_or("?"),
            request["params"]["method"].as_str().unwrap_or("?")
        ),
        Some(other) => other.to_string(),
        None => panic!("a native request without a method: {request}"),
    }
}

fn settings() -> Value {
    json!({
        "mode": {"current": "build"},
        "model": {
            "available": [{"label": "GLM-5.2", "providerLabel": "Z.ai - Coding Plan",
                           "ref": {"modelId": "GLM-5.2", "providerId": "builtin:zai-coding-plan"}}],
            "current": {"modelId": "GLM-5.2", "providerId": "builtin:zai-coding-plan"}
        },
        "thoughtLevel": {"available": [{"label": "Low", "value": "low"}], "current": "low",
                         "enabled": false}
    })
}

fn reply_for(method: &str) -> Value {
    match method {
        "agent.initialize" => json!({"available": true, "protocolName": "zcode-agent",
                                     "protocolVersion": 1, "workspaceKey": WORKSPACE}),
        "agent.readWorkspaceState" => json!({
            "modelCatalog": {"available": [], "providers": [{"id": "builtin:zai-coding-plan"}]},
            "settings": settings(),
            "workspace": {"workspacePath": WORKSPACE}
        }),
        "agent.createSession" | "agent.resumeSession" | "agent.readSession" => json!({
            "messages": [], "runtime": {},
            "session": {"sessionId": SESSION_ID, "status": "idle", "title": "Fix the parser",
                        "updatedAt": 1764500000000u64, "workspace": {"workspacePath": WORKSPACE}},
            "settings": settings(),
            "slashCommands": [{"description": "Create an AGENTS.md file", "name": "init"}]
        }),
        "__subscribe" => json!({"subscribed": true}),
        "__unsubscribe" => json!({"unsubscribed": true}),
        "agent.sendPrompt" => json!({"accepted": true, "sessionId": SESSION_ID}),
        "agent.getTaskTokenUsage" => json!({
            "sessionId": SESSION_ID, "totalTokens": 10, "inputTokens": 4, "outputTokens": 6,
            "reasoningTokens": 0, "cacheCreationTokens": 0, "cacheReadTokens": 0
        }),
        _ => Value::Null,
    }
}
