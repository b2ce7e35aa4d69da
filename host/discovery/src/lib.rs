//! Runtime discovery and the compatibility gate: finds a ZCode install, verifies it against
//! the mappers' contracts, and reports it (doctor).
//!
//! The flow: [`resolve_install_root`] (flag, env, OS default; no fallback), then
//! [`Inspector::inspect`] applies every mapper's contract to the root, then [`select`]
//! requires exactly one (mapper, artifact) to accept and yields the
//! [`zcode_contract::VerifiedInstall`] the mapper launches. [`Discovery`] runs all three and
//! keeps everything a [`DoctorReport`] shows.

mod archive;
mod asar;
mod contract_check;
mod discover;
mod doctor;
mod doctor_text;
mod exports;
mod files;
mod hashing;
mod inspect;
mod metadata;
mod probe;
mod root;
mod select;
mod verdict;
mod version;

pub use asar::{AsarArchive, AsarEntry};
pub use contract_check::validate_contract;
pub use discover::{Discovery, DiscoveryError, MapperSummary, discover};
pub use doctor::{
    Authentication, DoctorReport, FilesReport, HostFileReport, InstallReport, MapperReport,
    MapperVerdict, SelectedMapperReport, SmokeResult, UnloadedMapper, authentication_presence,
};
pub use exports::exported_names;
pub use hashing::{CacheStats, FileFacts, FileSource, HashCache};
pub use inspect::{Inspector, MapperContract};
pub use root::{
    INSTALL_ENV, INSTALL_FLAG, InstallRoot, RootError, RootSource, default_roots, how_to_point,
    process_env, resolve_install_root,
};
pub use select::{Selected, SelectionError, select};
pub use verdict::{
    Accepted, ArchiveKind, ArtifactExpectation, ArtifactVerdict, CliIntegrity, ContractOutcome,
    ContractVerdict, ExpectedFile, Findings, FoundFile, GateRule, Inspection, InstallFiles,
    Refusal,
};
pub use version::first_version_token;
