//! A loaded mapper and its per-connection and per-session instances, behind the
//! `zcode_contract` traits the core drives mappers through.

use std::sync::Arc;

use wasmtime::component::ResourceAny;
use zcode_contract::{
    AuthCommand, ConnectionOp, Contract, Effects, Inbound, LaunchPlan, Mapper, MapperConnection,
    MapperError, MapperFault, MapperSession, NativeReply, Operations, Outgoing, SessionInit,
    SessionInput, SessionOp, Step, VerifiedInstall,
};

use crate::bindings::ZcodeMapperPre;
use crate::bindings::zcode::mapper::types as wit;
use crate::cache::CacheOutcome;
use crate::config::Input;
use crate::convert::convert_all;
use crate::sandbox::{Instance, Limits, StoreState};
use crate::size::ByteSize;

/// A mapper component that passed the load checks, with its contract read once.
///
/// Every connection and every session gets an instance (and store) of its own, so a trap or a
/// limit hit fails only that connection or session. `launch_plan` and `auth_plan` run in a
/// fresh instance each time.
pub struct WasmMapper {
    origin: Arc<str>,
    contract: Contract,
    pre: ZcodeMapperPre<StoreState>,
    limits: Limits,
    cache_outcome: CacheOutcome,
}

impl WasmMapper {
    pub(crate) fn new(
        origin: Arc<str>,
        contract: Contract,
        pre: ZcodeMapperPre<StoreState>,
        limits: Limits,
        cache_outcome: CacheOutcome,
    ) -> Self {
        Self { origin, contract, pre, limits, cache_outcome }
    }

    /// Where this load's compiled code came from: the binary, the cache, or Cranelift.
    pub fn cache_outcome(&self) -> &CacheOutcome {
        &self.cache_outcome
    }

    fn instance(&self) -> Result<Instance, MapperFault> {
        Instance::new(&self.pre, self.origin.clone(), &self.limits)
    }
}

impl Mapper for WasmMapper {
    fn source(&self) -> &str {
        &self.origin
    }

    fn contract(&self) -> &Contract {
        &self.contract
    }

    fn launch_plan(&self, install: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
        let input = Input::bytes(install.byte_size());
        let install = wit::VerifiedInstall::from(install);
        self.instance()?.call(input, |guest, store| {
            guest.call_launch_plan(store, &install).map(convert_result)
        })?
    }

    fn auth_plan(
        &self,
        install: &VerifiedInstall,
        command: AuthCommand,
    ) -> Result<LaunchPlan, MapperError> {
        let input = Input::bytes(install.byte_size());
        let install = wit::VerifiedInstall::from(install);
        let command = command.into();
        self.instance()?.call(input, |guest, store| {
            guest.call_auth_plan(store, &install, command).map(convert_result)
        })?
    }

    fn connection(&self) -> Result<Box<dyn MapperConnection>, MapperFault> {
        let mut instance = self.instance()?;
        let handle = instance
            .call(Input::NONE, |guest, store| guest.connection().call_constructor(store))?;
        Ok(Box::new(WasmConnection { instance, handle, unframed: 0 }))
    }

    fn session(&self, init: &SessionInit) -> Result<Box<dyn MapperSession>, MapperFault> {
        let input = Input::bytes(init.byte_size());
        let init = wit::SessionInit::from(init);
        let mut instance = self.instance()?;
        let handle =
            instance.call(input, |guest, store| guest.session().call_constructor(store, &init))?;
        Ok(Box::new(WasmSession { instance, handle, announced: 0, unanswered: 0 }))
    }
}

/// One `connection` resource in an instance of its own.
pub struct WasmConnection {
    instance: Instance,
    handle: ResourceAny,
    /// Bytes pushed since a push last completed anything: the frame the mapper is assembling.
    unframed: usize,
}

impl MapperConnection for WasmConnection {
    /// The call's input counts the bytes of the frame still being assembled, not only this
    /// push's: a mapper must hold a frame until its end arrives, so the push that completes a
    /// 30 MB line (a real host answered a resume with 26 MB at once, issue 25 [B]) works on all
    /// of it, though it hands in one read's worth (`docs/reliability.md` F-34). How many bytes may go unframed is the
    /// bridge's `stdout_buffer_cap`, so this stays bounded.
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        let handle = self.handle;
        self.unframed = self.unframed.saturating_add(bytes.len());
        let inbound = self.instance.call(Input::bytes(self.unframed), |guest, store| {
            guest.connection().call_push(store, handle, bytes).map(convert_list_result)
        })??;
        if !inbound.is_empty() {
            self.unframed = 0;
        }
        Ok(inbound)
    }

    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        let handle = self.handle;
        self.instance.call(Input::NONE, |guest, store| {
            guest.connection().call_finish(store, handle).map(convert_list_result)
        })?
    }

    fn identity(&mut self) -> Result<Option<String>, MapperFault> {
        let handle = self.handle;
        self.instance
            .call(Input::NONE, |guest, store| guest.connection().call_identity(store, handle))
    }
}

impl Operations<ConnectionOp> for WasmConnection {
    fn start(
        &mut self,
        op_id: u64,
        op: &ConnectionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        let input = Input::bytes(op.byte_size());
        let (handle, op) = (self.handle, wit::ConnectionOp::from(op));
        let step = self.instance.call(input, |guest, store| {
            guest
                .connection()
                .call_start(store, handle, op_id, &op, first_request_id)
                .map(Step::from)
        })?;
        checked_step(&mut self.instance, step, first_request_id)
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: Option<&NativeReply>,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        let input = Input::bytes(reply.byte_size());
        let (handle, reply) = (self.handle, reply.map(wit::NativeReply::from));
        let step = self.instance.call(input, |guest, store| {
            let connection = guest.connection();
            connection
                .call_resume(store, handle, op_id, reply.as_ref(), first_request_id)
                .map(Step::from)
        })?;
        checked_step(&mut self.instance, step, first_request_id)
    }
}

/// The most input a session is budgeted for as still held from earlier `map` calls: the
/// bridge's stdout cap (64 MiB + 256 KiB), the most a connection could have handed on as one
/// native message. Without a bound, a mapper that answers nothing would have its limits grow
/// with every event.
const MOST_UNANSWERED: usize = 64 * 1024 * 1024 + 256 * 1024;

/// One `session` resource in an instance of its own.
pub struct WasmSession {
    instance: Instance,
    handle: ResourceAny,
    /// Requests the last `map` announced that `issue` has not handed out yet.
    announced: u32,
    /// Bytes mapped since, and in, the last `map` that made anything: input the mapper may
    /// still hold.
    unanswered: usize,
}

impl MapperSession for WasmSession {
    /// The call's input counts the bytes of earlier calls that made nothing, as a connection's
    /// `push` counts a frame's earlier reads: a large native event that a connection hands on
    /// in pieces as it arrives is joined by its session, and the call that completes it maps
    /// all of it with one piece of input of its own (issue 27). The call that last made
    /// something counts too: the start of the next event may have come in its batch.
    fn map(&mut self, inputs: Vec<SessionInput>) -> Result<Effects, MapperFault> {
        let bytes = inputs.byte_size();
        let held = self.unanswered.saturating_add(bytes).min(MOST_UNANSWERED);
        let input = Input { bytes: held, items: inputs.len() };
        let handle = self.handle;
        let wit_inputs: Vec<wit::SessionInput> = inputs.into_iter().map(Into::into).collect();
        let mapped = self.instance.call(input, |guest, store| {
            guest.session().call_map(store, handle, &wit_inputs).map(Effects::from)
        })?;
        let made_nothing =
            mapped.actions.is_empty() && mapped.writes.is_empty() && mapped.requests == 0;
        self.unanswered = if made_nothing { held } else { bytes };
        self.announced = mapped.requests;
        Ok(mapped)
    }

    fn issue(&mut self, first_request_id: u64) -> Result<Outgoing, MapperFault> {
        let announced = std::mem::take(&mut self.announced);
        let handle = self.handle;
        let outgoing = self.instance.call(Input::NONE, |guest, store| {
            guest.session().call_issue(store, handle, first_request_id).map(Outgoing::from)
        })?;
        if outgoing.requests.len() != announced as usize {
            return Err(self.instance.poison(format!(
                "mapper issued {} requests, but its last map announced {announced}",
                outgoing.requests.len()
            )));
        }
        checked_request_ids(&mut self.instance, &outgoing, first_request_id)?;
        Ok(outgoing)
    }
}

impl Operations<SessionOp> for WasmSession {
    fn start(
        &mut self,
        op_id: u64,
        op: &SessionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        let input = Input::bytes(op.byte_size());
        let (handle, op) = (self.handle, wit::SessionOp::from(op));
        let step = self.instance.call(input, |guest, store| {
            guest.session().call_start(store, handle, op_id, &op, first_request_id).map(Step::from)
        })?;
        checked_step(&mut self.instance, step, first_request_id)
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: Option<&NativeReply>,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        let input = Input::bytes(reply.byte_size());
        let (handle, reply) = (self.handle, reply.map(wit::NativeReply::from));
        let step = self.instance.call(input, |guest, store| {
            guest
                .session()
                .call_resume(store, handle, op_id, reply.as_ref(), first_request_id)
                .map(Step::from)
        })?;
        checked_step(&mut self.instance, step, first_request_id)
    }
}

fn convert_result<W, C: From<W>>(result: Result<W, wit::MapperError>) -> Result<C, MapperError> {
    result.map(C::from).map_err(MapperError::from)
}

fn convert_list_result<W, C: From<W>>(
    result: Result<Vec<W>, wit::MapperError>,
) -> Result<Vec<C>, MapperError> {
    result.map(convert_all).map_err(MapperError::from)
}

/// The request-id rule for the requests of a `wait` step.
fn checked_step(
    instance: &mut Instance,
    step: Step,
    first_request_id: u64,
) -> Result<Step, MapperFault> {
    if let Step::Wait(outgoing) = &step {
        checked_request_ids(instance, outgoing, first_request_id)?;
    }
    Ok(step)
}

/// The core hands out request ids; requests must use `first_request_id`, `+1`, ... in order.
/// Anything else would corrupt the core's pending table, so the instance is failed.
fn checked_request_ids(
    instance: &mut Instance,
    outgoing: &Outgoing,
    first_request_id: u64,
) -> Result<(), MapperFault> {
    for (request, expected) in outgoing.requests.iter().zip(first_request_id..) {
        if request.id != expected {
            return Err(instance
                .poison(format!("mapper used request id {}, expected {expected}", request.id)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send<T: Send>() {}

    #[test]
    fn instances_can_move_between_threads() {
        assert_send::<WasmConnection>();
        assert_send::<WasmSession>();
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<WasmMapper>();
    }
}
