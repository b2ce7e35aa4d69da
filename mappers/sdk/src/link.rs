//! A [`Link`] as the contract drives it: each connection operation starts with its ACP
//! parameters read (parameters that do not read are refused before the link sees them) and
//! goes on with each reply it waits for, checked against the stage it waits in ([`Pending`]).

use zcode_contract::{ConnectionOp, Inbound, MapperError, NativeReply, Step};

use crate::acp::params::ListParams;
use crate::ops::Pending;
use crate::{Connection, Link};

/// A [`Link`] driven through the contract.
pub struct Linked<L: Link> {
    link: L,
    pending: Pending<L::Stage>,
}

impl<L: Link> Linked<L> {
    pub fn new(link: L) -> Self {
        Self { link, pending: Pending::default() }
    }

    pub fn link(&self) -> &L {
        &self.link
    }
}

impl<L: Link + Default> Default for Linked<L> {
    fn default() -> Self {
        Self::new(L::default())
    }
}

impl<L: Link> Connection for Linked<L> {
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        self.link.push(bytes)
    }

    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        self.link.finish()
    }

    fn identity(&self) -> Option<String> {
        self.link.identity()
    }

    fn start(&mut self, op_id: u64, op: &ConnectionOp, id: u64) -> Step {
        let link = &mut self.link;
        let next = self.pending.check_new(op_id).and_then(|()| match op {
            ConnectionOp::Setup => link.setup(id),
            // A `Link` gets the workspace; the probe's facts are for mappers that say something
            // about them (the app-server mapper matches `ConnectionOp` itself).
            ConnectionOp::Probe(probe) => link.probe(&probe.workspace, id),
            ConnectionOp::ListSessions(params) => link.list_sessions(ListParams::read(params)?, id),
        });
        self.pending.step(op_id, next)
    }

    fn resume(&mut self, op_id: u64, reply: Option<&NativeReply>, id: u64) -> Step {
        let next = self.pending.resume(op_id, reply).and_then(|resumed| {
            let reply = resumed.reply.as_ref().map(|(reply, label)| (*reply, label.as_str()));
            self.link.resume(resumed.stage, reply, id)
        });
        self.pending.step(op_id, next)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use zcode_contract::{ErrorKind, NativeRequest, ReplyBody};

    use super::*;
    use crate::ops::Next;

    /// Probes with one request; lists without any.
    #[derive(Default)]
    struct Probe;

    impl Link for Probe {
        type Stage = &'static str;

        fn push(&mut self, _: &[u8]) -> Result<Vec<Inbound>, MapperError> {
            Ok(vec![Inbound::Ready])
        }

        fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
            Ok(Vec::new())
        }

        fn probe(&mut self, workspace: &str, id: u64) -> Result<Next<&'static str>, MapperError> {
            let bytes = workspace.as_bytes().to_vec();
            Ok(Next::send("probing", NativeRequest { id, bytes, label: "p".into(), timeout_ms: 9 }))
        }

        fn resume(
            &mut self,
            stage: &'static str,
            reply: Option<(&NativeReply, &str)>,
            _: u64,
        ) -> Result<Next<&'static str>, MapperError> {
            Ok(Next::done(&json!({"stage": stage, "label": reply.map(|(_, label)| label)})))
        }
    }

    #[test]
    fn drives_operations_by_stage() {
        let mut linked = Linked::new(Probe);
        assert_eq!(linked.push(b"x").unwrap(), [Inbound::Ready]);
        assert!(matches!(linked.start(1, &ConnectionOp::Setup, 1), Step::Done(Ok(_))));
        assert!(matches!(
            linked.start(2, &ConnectionOp::Probe(zcode_contract::ProbeRequest::workspace("/w")), 3),
            Step::Wait(_)
        ));
        let reply = NativeReply { id: 3, body: ReplyBody::Ok("{}".into()) };
        let Step::Done(Ok(probed)) = linked.resume(2, Some(&reply), 4) else { panic!() };
        assert_eq!(probed.response, json!({"stage": "probing", "label": "p"}).to_string());
        let list = linked.start(3, &ConnectionOp::ListSessions("{\"cwd\":\"/w\"}".into()), 4);
        assert!(matches!(list, Step::Done(Err(e)) if e.kind == ErrorKind::Unsupported));
        let bad = linked.start(4, &ConnectionOp::ListSessions("[]".into()), 4);
        assert!(matches!(bad, Step::Done(Err(e)) if e.kind == ErrorKind::InvalidParams));
    }
}
