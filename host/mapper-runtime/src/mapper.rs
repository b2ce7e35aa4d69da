//! A loaded mapper and its per-connection and per-session instances, behind the
//! `zcode_contract` traits the core drives mappers through.

use std::sync::Arc;

use wasmtime::component::ResourceAny;
use zcode_contract::{
    Action, AuthCommand, ConnectionOp, Contract, Inbound, LaunchPlan, Mapper, MapperConnection,
    MapperError, MapperFault, MapperSession, NativeReply, SessionInit, SessionOp, Step, Terminal,
    VerifiedInstall,
};

use crate::bindings::ZcodeMapperPre;
use crate::bindings::zcode::mapper::types as wit;
use crate::cache::CacheOutcome;
use crate::convert::convert_all;
use crate::sandbox::{Instance, Limits, StoreState};

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

    /// Whether this load came from the precompiled cache.
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
        let install = wit::VerifiedInstall::from(install);
        self.instance()?
            .call(|guest, store| guest.call_launch_plan(store, &install).map(convert_result))?
    }

    fn auth_plan(
        &self,
        install: &VerifiedInstall,
        command: AuthCommand,
    ) -> Result<LaunchPlan, MapperError> {
        let install = wit::VerifiedInstall::from(install);
        let command = command.into();
        self.instance()?.call(|guest, store| {
            guest.call_auth_plan(store, &install, command).map(convert_result)
        })?
    }

    fn connection(&self) -> Result<Box<dyn MapperConnection>, MapperFault> {
        let mut instance = self.instance()?;
        let handle = instance.call(|guest, store| guest.connection().call_constructor(store))?;
        Ok(Box::new(WasmConnection { instance, handle }))
    }

    fn session(&self, init: &SessionInit) -> Result<Box<dyn MapperSession>, MapperFault> {
        let init = wit::SessionInit::from(init);
        let mut instance = self.instance()?;
        let handle =
            instance.call(|guest, store| guest.session().call_constructor(store, &init))?;
        Ok(Box::new(WasmSession { instance, handle }))
    }
}

/// One `connection` resource in an instance of its own.
pub struct WasmConnection {
    instance: Instance,
    handle: ResourceAny,
}

impl MapperConnection for WasmConnection {
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        let handle = self.handle;
        self.instance.call(|guest, store| {
            guest.connection().call_push(store, handle, bytes).map(convert_list_result)
        })?
    }

    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        let handle = self.handle;
        self.instance.call(|guest, store| {
            guest.connection().call_finish(store, handle).map(convert_list_result)
        })?
    }

    fn start(
        &mut self,
        op_id: u64,
        op: &ConnectionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        let (handle, op) = (self.handle, wit::ConnectionOp::from(op));
        let step = self.instance.call(|guest, store| {
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
        reply: &NativeReply,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        let (handle, reply) = (self.handle, wit::NativeReply::from(reply));
        let step = self.instance.call(|guest, store| {
            let connection = guest.connection();
            connection.call_resume(store, handle, op_id, &reply, first_request_id).map(Step::from)
        })?;
        checked_step(&mut self.instance, step, first_request_id)
    }
}

/// One `session` resource in an instance of its own.
pub struct WasmSession {
    instance: Instance,
    handle: ResourceAny,
}

impl MapperSession for WasmSession {
    fn start(
        &mut self,
        op_id: u64,
        op: &SessionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        let (handle, op) = (self.handle, wit::SessionOp::from(op));
        let step = self.instance.call(|guest, store| {
            guest.session().call_start(store, handle, op_id, &op, first_request_id).map(Step::from)
        })?;
        checked_step(&mut self.instance, step, first_request_id)
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: &NativeReply,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        let (handle, reply) = (self.handle, wit::NativeReply::from(reply));
        let step = self.instance.call(|guest, store| {
            guest
                .session()
                .call_resume(store, handle, op_id, &reply, first_request_id)
                .map(Step::from)
        })?;
        checked_step(&mut self.instance, step, first_request_id)
    }

    fn map_event(&mut self, payload: &str) -> Result<Vec<Action>, MapperFault> {
        let handle = self.handle;
        let mapped = self.instance.call(|guest, store| {
            guest.session().call_map_event(store, handle, payload).map(convert_list_result)
        })?;
        // An event the mapper cannot translate is a broken stream for the coordinator.
        Ok(mapped.unwrap_or_else(|err| vec![Action::Terminal(Terminal::Broken(err))]))
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

/// The core hands out request ids; a step must use `first_request_id`, `+1`, ... in order.
/// Anything else would corrupt the core's pending table, so the instance is failed.
fn checked_step(
    instance: &mut Instance,
    step: Step,
    first_request_id: u64,
) -> Result<Step, MapperFault> {
    if let Step::Wait(outgoing) = &step {
        for (request, expected) in outgoing.requests.iter().zip(first_request_id..) {
            if request.id != expected {
                return Err(instance.poison(format!(
                    "mapper used request id {}, expected {expected}",
                    request.id
                )));
            }
        }
    }
    Ok(step)
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
