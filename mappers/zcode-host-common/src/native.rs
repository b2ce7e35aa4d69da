//! The native form of a generation's mapper (tests, benchmarks, the fuzzer): the same logic the
//! component exports, behind `zcode_contract::Mapper`.

/// Declares the generation's native mapper type: its `source`, the contract (built once), the
/// launch and auth plans, and fresh connection and session states (`<type>::new()`).
#[macro_export]
macro_rules! native_mapper {
    (
        $(#[$meta:meta])*
        pub struct $mapper:ident {
            source: $source:literal,
            contract: $contract:path,
            launch_plan: $launch_plan:path,
            auth_plan: $auth_plan:path,
            connection: $connection:ty,
            session: $session:ty $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default)]
        pub struct $mapper;

        impl ::zcode_contract::Mapper for $mapper {
            fn source(&self) -> &str {
                $source
            }

            fn contract(&self) -> &::zcode_contract::Contract {
                static CONTRACT: ::std::sync::OnceLock<::zcode_contract::Contract> =
                    ::std::sync::OnceLock::new();
                CONTRACT.get_or_init($contract)
            }

            fn launch_plan(
                &self,
                install: &::zcode_contract::VerifiedInstall,
            ) -> Result<::zcode_contract::LaunchPlan, ::zcode_contract::MapperError> {
                $launch_plan(install)
            }

            fn auth_plan(
                &self,
                install: &::zcode_contract::VerifiedInstall,
                command: ::zcode_contract::AuthCommand,
            ) -> Result<::zcode_contract::LaunchPlan, ::zcode_contract::MapperError> {
                $auth_plan(install, command)
            }

            fn connection(
                &self,
            ) -> Result<Box<dyn ::zcode_contract::MapperConnection>, ::zcode_contract::MapperFault>
            {
                Ok(Box::new(<$connection>::new()))
            }

            fn session(
                &self,
                init: &::zcode_contract::SessionInit,
            ) -> Result<Box<dyn ::zcode_contract::MapperSession>, ::zcode_contract::MapperFault>
            {
                Ok(Box::new(<$session>::new(init)))
            }
        }
    };
}
