//! Where V4 frames go: every event listen (`onDynamicConversationFrame`) whose workspace
//! matches the subscription's. The connection scope routes by workspace only; clients filter
//! by `topic` and `subscriptionId` (ZCode `zcodeAgentConnectionScope.ts`). Frames produced
//! while nobody listens on the workspace are lost, as they are on the real server.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::json;

use crate::common::output::Output;
use crate::services::fault::Fault;
use crate::services::ipc::message::EVENT_FIRE;
use crate::services::ipc::transport::encode_frame;
use crate::services::ipc::value::RpcValue;
use crate::services::out::Messages;
use crate::v4::publisher::Delta;
use crate::v4::wire::{self, Frame, Framing, Logical};

pub struct Router {
    out: Arc<Output>,
    /// Listen request id → workspace key.
    listens: Mutex<BTreeMap<i64, String>>,
    /// Frame faults waiting for the next frame: of the conversation (topic) that armed them,
    /// or (`None`, a fault point of the process) of any.
    armed: Mutex<Vec<(Option<String>, Fault)>>,
    max_physical_bytes: usize,
}

impl Router {
    pub fn new(out: Arc<Output>, max_physical_bytes: usize) -> Router {
        Router {
            out,
            listens: Mutex::new(BTreeMap::new()),
            armed: Mutex::new(Vec::new()),
            max_physical_bytes,
        }
    }

    pub fn listen(&self, id: i64, workspace_key: String) {
        self.listens.lock().expect("listens lock").insert(id, workspace_key);
    }

    /// Disposes a listen; `false` when the id was not one.
    pub fn dispose(&self, id: i64) -> bool {
        self.listens.lock().expect("listens lock").remove(&id).is_some()
    }

    pub fn dispose_all(&self) {
        self.listens.lock().expect("listens lock").clear();
    }

    /// Arms a frame fault for the next frame that is delivered, of `topic` if given. A turn's
    /// fault is its conversation's: armed for any frame, one left over when a stopped turn
    /// sent no more frames broke the next frame of whichever conversation came next (F-21).
    pub fn arm(&self, topic: Option<&str>, fault: Fault) {
        self.armed.lock().expect("armed lock").push((topic.map(str::to_owned), fault));
    }

    /// Drops the frame faults `topic`'s turn armed and no frame of it carried (the turn ended).
    pub fn disarm(&self, topic: &str) {
        self.armed.lock().expect("armed lock").retain(|(scope, _)| scope.as_deref() != Some(topic));
    }

    /// The first fault armed for a frame of `topic`.
    fn take_armed(&self, topic: &str) -> Option<(Option<String>, Fault)> {
        let mut armed = self.armed.lock().expect("armed lock");
        let index =
            armed.iter().position(|(scope, _)| scope.as_deref().is_none_or(|t| t == topic))?;
        Some(armed.remove(index))
    }

    /// Encodes and writes one logical frame to the listens of `workspace_key`.
    pub fn deliver(&self, workspace_key: &str, mut frame: Frame) {
        let (scope, fault) = match self.take_armed(&frame.topic) {
            Some((scope, fault)) => (scope, Some(fault)),
            None => (None, None),
        };
        match fault {
            // The frame is lost: the next one starts past what the client has applied.
            Some(Fault::SeqGap) => return,
            Some(Fault::UnknownDelta) => {
                if let Logical::Deltas { deltas, .. } = &mut frame.logical {
                    let unknown = json!({"op": "sim.unknownOp", "detail": {"simulated": true}});
                    deltas.push(Arc::new(Delta::Op(unknown)));
                } else {
                    // A snapshot frame has no deltas; keep the fault for the next frame.
                    self.arm(scope.as_deref(), Fault::UnknownDelta);
                }
            }
            _ => {}
        }
        let corrupt = fault == Some(Fault::CrcMismatch);
        let framing = Framing::Measured { max_physical_bytes: self.max_physical_bytes };
        let wires = match wire::encode(&frame, framing, corrupt, corrupt) {
            Ok(wires) => wires,
            Err(error) => {
                eprintln!("zcode-sim: dropped a V4 frame that cannot be encoded: {}", error.0);
                return;
            }
        };
        let listens: Vec<i64> = self
            .listens
            .lock()
            .expect("listens lock")
            .iter()
            .filter(|(_, key)| key.as_str() == workspace_key)
            .map(|(id, _)| *id)
            .collect();
        for wire in wires {
            let body = RpcValue::Json(wire);
            for id in &listens {
                self.out.message(EVENT_FIRE, Some(*id), &body);
            }
        }
    }

    /// Writes raw broken output of a transport fault, to the first listen (or id 0).
    pub fn write_broken(&self, fault: Fault) {
        let id = self.listens.lock().expect("listens lock").keys().next().copied().unwrap_or(0);
        let bytes = match fault {
            Fault::CorruptHeader => {
                let mut header = vec![1u8, 0, 0, 0, 0, 0, 0, 0, 0];
                header.extend_from_slice(&0xffff_fff0u32.to_be_bytes());
                header
            }
            Fault::CorruptMessage => encode_frame(&[0x7f, 0x00, 0x00]),
            Fault::Oversize => {
                // One complete wire frame far past the 1 MiB physical limit.
                let wire = json!({"wireVersion": 3, "kind": "complete", "deliveryKind": "online",
                    "logicalFrameId": "sim-oversize-lf-1", "logicalFrameOrdinal": 1,
                    "topic": "conversation/sim-oversize", "subscriptionId": "sim-oversize",
                    "frame": {"padding": "x".repeat(16 * 1024 * 1024 + 1024)}});
                let mut body = Vec::new();
                RpcValue::Array(vec![RpcValue::Int(EVENT_FIRE), RpcValue::Int(id as i32)])
                    .encode(&mut body);
                RpcValue::Object(wire).encode(&mut body);
                encode_frame(&body)
            }
            Fault::InvalidUtf8 => {
                let mut text = br#"{"wireVersion":3,"kind":"complete","frame":""#.to_vec();
                text.extend_from_slice(&[0xff, 0xfe, 0xfd]);
                text.extend_from_slice(br#""}"#);
                let mut body = Vec::new();
                RpcValue::Array(vec![RpcValue::Int(EVENT_FIRE), RpcValue::Int(id as i32)])
                    .encode(&mut body);
                body.push(5);
                crate::services::ipc::value::write_varint(&mut body, text.len() as u32);
                body.extend_from_slice(&text);
                encode_frame(&body)
            }
            _ => return,
        };
        self.out.bytes(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// F-21: a fault a turn armed is its conversation's, and goes when the turn ends.
    #[test]
    fn a_turns_frame_fault_stays_in_its_conversation_and_ends_with_it() {
        let router = Router::new(Output::start(false), wire::MAX_FRAME_BYTES);
        router.arm(Some("conversation/a"), Fault::UnknownDelta);
        router.arm(Some("conversation/a"), Fault::UnknownDelta);
        assert_eq!(router.take_armed("conversation/b"), None, "another conversation's frame");
        assert_eq!(
            router.take_armed("conversation/a"),
            Some((Some("conversation/a".into()), Fault::UnknownDelta))
        );
        router.arm(None, Fault::CrcMismatch);
        router.disarm("conversation/a");
        assert_eq!(
            router.take_armed("conversation/b"),
            Some((None, Fault::CrcMismatch)),
            "a process fault point's fault is any frame's"
        );
        assert_eq!(router.take_armed("conversation/a"), None, "the ended turn's fault is gone");
    }
}
