//! Why the runtime could not start or could not load a mapper.

use zcode_contract::MapperFault;

/// The WebAssembly engine could not be created with the runtime's settings.
#[derive(Debug, thiserror::Error)]
#[error("cannot start the mapper runtime: {0}")]
pub struct EngineError(pub(crate) String);

/// A mapper could not be loaded; `origin` names it (embedded name or file path).
#[derive(Debug, thiserror::Error)]
#[error("cannot load mapper {origin}: {failure}")]
pub struct LoadError {
    pub origin: String,
    pub failure: LoadFailure,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadFailure {
    #[error("cannot read the file: {0}")]
    Read(std::io::Error),
    #[error("not a valid WebAssembly component: {0}")]
    Invalid(String),
    #[error("it does not export the zcode:mapper/mapper interface (its exports: {0})")]
    NotAMapper(String),
    #[error("mapper built for WIT zcode:mapper@{found}, this core supports {supported}")]
    WitVersion { found: String, supported: String },
    #[error(
        "it imports capabilities a mapper may not have (only zcode:mapper, wasi:io and \
         wasi:cli are allowed): {}",
        .0.join(", ")
    )]
    ForbiddenImports(Vec<String>),
    #[error("cannot link it: {0}")]
    Link(String),
    #[error("its contract() call failed: {0}")]
    Contract(MapperFault),
}

/// A wasmtime error with its causes on one line (`Debug` would add a multi-line backtrace).
pub(crate) fn one_line(err: &wasmtime::Error) -> String {
    err.chain().map(|cause| cause.to_string()).collect::<Vec<_>>().join(": ")
}
