//! Runtime discovery and the compatibility gate: finds a ZCode install, verifies it against
//! the mappers' contracts, and reports it (doctor).
//!
//! The flow: [`resolve_install_root`] (flag, env, the places ZCode installs itself; no
//! fallback) and [`resolve_explicit_node`], then [`Inspector::inspect`] applies every mapper's
//! contract to the root (the desktop layout of this OS, or the standalone runtime layout with
//! a verified Node), then [`select`] requires exactly one (mapper, release) to accept and yields
//! the [`zcode_contract::VerifiedInstall`] the mapper launches. [`Discovery`] runs all three and
//! keeps everything a [`DoctorReport`] shows.

mod appimage;
mod archive;
mod asar;
mod contract_check;
mod desktop;
mod discover;
mod doctor;
mod doctor_text;
mod exports;
mod files;
mod hashing;
mod inspect;
mod metadata;
mod node;
mod paseo;
mod probe;
mod release;
mod root;
mod runtime;
mod select;
mod uninstall;
mod verdict;
mod version;

pub use appimage::{extraction_hint, find_appimages, is_appimage};
pub use asar::{AsarArchive, AsarEntry};
pub use contract_check::validate_contract;
pub use discover::{Discovery, DiscoveryError, MapperSummary, discover};
pub use doctor::{
    Authentication, DoctorReport, DropInReport, DropInTrust, FilesReport, HostFileReport,
    InstallReport, MapperReport, MapperVerdict, NodeReport, SelectedMapperReport, SmokeResult,
    authentication_presence,
};
pub use exports::exported_names;
pub use hashing::{CacheStats, FileFacts, FileSource, HashCache};
pub use inspect::{Inspector, InstallTarget, MapperContract};
pub use node::resolve_explicit_node;
pub use node::{NODE_ENV, NODE_FLAG, NodeCandidate, NodeCheck, NodeSource};
pub use paseo::{ManagedEntry, ManagedFolder, managed_runtimes_dir};
pub use root::{
    Candidate, INSTALL_ENV, INSTALL_FLAG, InstallRoot, RootError, RootSource, Search,
    default_candidates, how_to_point, process_env, resolve_install_root,
};
pub use select::{
    EMBEDDED_SOURCE_PREFIX, Selected, SelectionError, VersionStanding, select, version_standing,
};
pub use uninstall::{
    RecordedRegistry, SystemRegistry, UninstallEntry, UninstallRegistry, root_of, zcode_roots,
};
pub use verdict::{
    Accepted, ArchiveKind, ContractOutcome, ContractVerdict, ExpectedFile, Findings, FoundFile,
    GateRule, Inspection, InstallFiles, Pinning, Refusal, ReleaseExpectation, ReleaseVerdict,
};
pub use version::{compare_versions, first_version_token};
