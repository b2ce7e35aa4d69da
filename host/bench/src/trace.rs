//! Reads the session calls of a recording (`ZCODE_ACP_RECORD`, golden-trace format) back into
//! contract values with the format's own parser, so a recorded turn can be replayed through any
//! mapper at full speed.

use zcode_contract::{NativeReply, SessionInit, SessionInput, SessionOp};
use zcode_golden::{Call, parse_line};

/// One recorded call on a mapper session.
pub enum SessionCall {
    New(SessionInit),
    Start { op_id: u64, op: SessionOp, first_request_id: u64 },
    Resume { op_id: u64, reply: Option<NativeReply>, first_request_id: u64 },
    Map(Vec<SessionInput>),
    Issue { first_request_id: u64 },
}

/// The calls of session `name`, in order.
pub fn session_calls(recording: &str, name: &str) -> Result<Vec<SessionCall>, String> {
    let mut calls = Vec::new();
    for (index, raw) in recording.lines().enumerate() {
        let Some(line) = parse_line(raw) else { continue };
        let line = line.map_err(|e| format!("line {}: {e}", index + 1))?;
        let call = match line.call {
            Call::SessionNew { name: n, init } if n == name => SessionCall::New(init),
            Call::SessionStart { name: n, op_id, op, first_request_id } if n == name => {
                SessionCall::Start { op_id, op, first_request_id }
            }
            Call::SessionResume { name: n, op_id, reply, first_request_id } if n == name => {
                SessionCall::Resume { op_id, reply, first_request_id }
            }
            Call::SessionMap { name: n, inputs } if n == name => SessionCall::Map(inputs),
            Call::SessionIssue { name: n, first_request_id } if n == name => {
                SessionCall::Issue { first_request_id }
            }
            _ => continue,
        };
        calls.push(call);
    }
    Ok(calls)
}
