//! A mapper natively: the same logic the component exports, behind `zcode_contract::Mapper`
//! (tests, golden traces, benchmarks, the fuzzer). [`native_mapper!`] declares the type.

use zcode_contract::{
    ConnectionOp, Effects, Inbound, MapperConnection, MapperError, MapperFault, MapperSession,
    NativeReply, Operations, Outgoing, SessionInput, SessionOp, Step,
};

use crate::{Connection, SessionMachine};

/// A [`Connection`] as the core drives it.
pub struct NativeConnection<C>(pub C);

impl<C: Connection + Send> Operations<ConnectionOp> for NativeConnection<C> {
    fn start(
        &mut self,
        op_id: u64,
        op: &ConnectionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        Ok(self.0.start(op_id, op, first_request_id))
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: Option<&NativeReply>,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        Ok(self.0.resume(op_id, reply, first_request_id))
    }
}

impl<C: Connection + Send> MapperConnection for NativeConnection<C> {
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
        self.0.push(bytes)
    }

    fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
        self.0.finish()
    }

    fn identity(&mut self) -> Result<Option<String>, MapperFault> {
        Ok(self.0.identity())
    }
}

/// A [`SessionMachine`] as the core drives it.
pub struct NativeSession<S>(pub S);

impl<S: SessionMachine + Send> Operations<SessionOp> for NativeSession<S> {
    fn start(
        &mut self,
        op_id: u64,
        op: &SessionOp,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        Ok(self.0.start(op_id, op, first_request_id))
    }

    fn resume(
        &mut self,
        op_id: u64,
        reply: Option<&NativeReply>,
        first_request_id: u64,
    ) -> Result<Step, MapperFault> {
        Ok(self.0.resume(op_id, reply, first_request_id))
    }
}

impl<S: SessionMachine + Send> MapperSession for NativeSession<S> {
    fn map(&mut self, inputs: Vec<SessionInput>) -> Result<Effects, MapperFault> {
        Ok(self.0.map(&inputs))
    }

    fn issue(&mut self, first_request_id: u64) -> Result<Outgoing, MapperFault> {
        Ok(self.0.issue(first_request_id))
    }
}

/// Declares a unit struct that is the mapper of a [`Definition`](crate::Definition) natively:
///
/// ```text
/// zcode_mapper_sdk::native_mapper! {
///     /// The mapper, natively.
///     pub struct EchoMapper(crate::Echo), source: "native:echo-v1";
/// }
/// ```
///
/// `source` names it in reports. The contract is built once, on first use.
#[macro_export]
macro_rules! native_mapper {
    (
        $(#[$meta:meta])*
        $vis:vis struct $mapper:ident($definition:ty), source: $source:literal $(;)?
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default)]
        $vis struct $mapper;

        impl $crate::contract::Mapper for $mapper {
            fn source(&self) -> &str {
                $source
            }

            fn contract(&self) -> &$crate::contract::Contract {
                static CONTRACT: ::std::sync::OnceLock<$crate::contract::Contract> =
                    ::std::sync::OnceLock::new();
                CONTRACT.get_or_init(<$definition as $crate::Definition>::contract)
            }

            fn launch_plan(
                &self,
                install: &$crate::contract::VerifiedInstall,
            ) -> Result<$crate::contract::LaunchPlan, $crate::contract::MapperError> {
                <$definition as $crate::Definition>::launch_plan(install)
            }

            fn auth_plan(
                &self,
                install: &$crate::contract::VerifiedInstall,
                command: $crate::contract::AuthCommand,
            ) -> Result<$crate::contract::LaunchPlan, $crate::contract::MapperError> {
                <$definition as $crate::Definition>::auth_plan(install, command)
            }

            fn connection(
                &self,
            ) -> Result<
                Box<dyn $crate::contract::MapperConnection>,
                $crate::contract::MapperFault,
            > {
                Ok(Box::new($crate::native::NativeConnection(
                    <$definition as $crate::Definition>::connection(),
                )))
            }

            fn session(
                &self,
                init: &$crate::contract::SessionInit,
            ) -> Result<Box<dyn $crate::contract::MapperSession>, $crate::contract::MapperFault>
            {
                Ok(Box::new($crate::native::NativeSession(
                    <$definition as $crate::Definition>::session(init),
                )))
            }
        }
    };
}
