//! Why the runtime could not start or could not load a mapper.

use zcode_contract::MapperFault;

use crate::policy::WitAge;

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
    #[error("it does not export the zcode:mapper/mapper interface ({})", describe_exports(.0))]
    NotAMapper(Vec<String>),
    /// `found` and `needed` name package and version, e.g. `zcode:mapper@0.1.0`.
    #[error("it speaks WIT {found}, but this core speaks {needed}: {}", age.advice())]
    WitVersion { found: String, needed: String, age: WitAge },
    #[error(
        "it imports capabilities a mapper may not have (only zcode:mapper/logging, wasi:io \
         and wasi:cli are allowed): {}",
        .0.join(", ")
    )]
    ForbiddenImports(Vec<String>),
    #[error("cannot link it: {0}")]
    Link(String),
    #[error("its contract() call failed: {0}")]
    Contract(MapperFault),
}

fn describe_exports(exports: &[String]) -> String {
    if exports.is_empty() {
        "it exports nothing".to_string()
    } else {
        format!("its exports: {}", exports.join(", "))
    }
}

/// A wasmtime error with its causes on one line (`Debug` would add a multi-line backtrace).
pub(crate) fn one_line(err: &wasmtime::Error) -> String {
    err.chain().map(|cause| cause.to_string()).collect::<Vec<_>>().join(": ")
}
