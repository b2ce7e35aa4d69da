//! The embedded mappers (`zcode-embedded-mappers`) compiled ahead of time for the binary's
//! target, and the contract of each as the runtime read it at build time (see `build.rs`).
//! Discovery needs every contract, but only the selected mapper is ever loaded, from its
//! artifact.

include!(concat!(env!("OUT_DIR"), "/precompiled.rs"));

/// The artifact of the embedded mapper `name` precompiled at build time for the binary's
/// target, for `MapperRuntime::load_embedded`; `None` when the build could not make one.
pub fn precompiled(name: &str) -> Option<&'static [u8]> {
    PRECOMPILED.iter().find(|(embedded, _)| *embedded == name).map(|(_, bytes)| *bytes)
}

/// The contract of the embedded mapper `name` as JSON (a `zcode_contract::Contract`).
pub fn contract_json(name: &str) -> Option<&'static str> {
    CONTRACTS.iter().find(|(embedded, _)| *embedded == name).map(|(_, json)| *json)
}
