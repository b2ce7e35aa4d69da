//! The mapper contract as plain Rust.
//!
//! `wit/mapper.wit` (package `zcode:mapper@0.4.0`) is the contract between the core and a
//! mapper. The mapper runtime turns the WIT values into these types so that discovery, the host
//! bridge and the session coordinator never depend on wasmtime, and so that tests can drive them
//! with hand-written mappers. Field meanings are documented once, in the WIT file.

mod error;
mod facts;
mod install;
mod mapper;
mod native;
mod ops;
mod platform;
mod session;

/// The WIT package version this contract mirrors; a component built against another is refused.
pub const WIT_PACKAGE: &str = "zcode:mapper@0.4.0";

pub use error::{ErrorKind, MapperError, MapperFault};
pub use facts::{
    DataFile, FactKind, FactSource, FactValue, Facts, JsonFact, MAX_FACT_BYTES,
    MAX_FACT_FILE_BYTES, Presence, PresenceFact, fact,
};
pub use install::{
    AesGcmEncoding, AuthCommand, Contract, CredentialEncoding, CredentialLookup, CredentialSource,
    DesktopLayout, FORK_METHOD, FilePin, LaunchPlan, Layout, LayoutKind, Release, RuntimeLayout,
    VerifiedInstall, VersionProbe,
};
pub use mapper::{Mapper, MapperConnection, MapperSession, Operations};
pub use native::{
    Inbound, NativeData, NativeReply, NativeRequest, NativeWrite, ReplyBody, RoutedEvent,
    SecretFill,
};
pub use ops::{
    ClientFeatures, ConnectionOp, InteractionAnswer, InteractionOutcome, OpResult, Outgoing,
    ProbeRequest, SessionInit, SessionOp, Step,
};
pub use platform::{Os, Platform};
pub use session::{
    Action, Effects, Interaction, InteractionRequest, PermissionRequest, SessionInput, StopReason,
    Terminal,
};
