//! Fake ZCode install roots for tests and the simulator.
//!
//! A fake install has the directory layout of a real ZCode install (macOS, Linux or Windows,
//! per the 3.11 reference §1.2) and the simulator's own host files, so discovery and the
//! compatibility gate can be exercised end to end without ZCode. Its "executable" is a
//! `#!/bin/sh` launcher that hands every invocation to a runner chosen by the caller (the
//! simulator), telling it which install it runs for.
//!
//! The runner is invoked as `<program> <args…> --install-root <root> -- <args given to the
//! executable…>`, with the environment the executable was started with. For
//! [`Variant::WrongCliVersion`] the launcher also exports `ZCODE_SIM_CLI_VERSION`, which the
//! runner must report as its CLI version when asked `<cli-entry> version`.
//!
//! Broken [`Variant`]s produce the install defects the gate must refuse (or, for a modified
//! CLI, accept with a diagnostic). Files come from `tests/fixtures/fake-zcode-host/` (and, for
//! the provider config a 3.12 release bundles beside its host archive,
//! `tests/fixtures/fake-zcode-host-3.12/`), embedded at build time; nothing here depends on
//! their content.

mod builder;
mod cli;
mod launcher;
mod layout;
mod variant;

pub use builder::{FakeInstall, FakeInstallBuilder, FakeInstallError};
pub use cli::main_with_args;
pub use launcher::{Runner, SIM_CLI_VERSION_ENV};
pub use layout::{
    CLI_ENTRY, HOST_INDEX, HOST_INDEX_PATH, HOST_RPC_CHUNK, HOST_RPC_CHUNK_PATH, LayoutPaths,
    METADATA_FIELDS, METADATA_PLATFORM_KEY, PROVIDER_CONFIG, PROVIDER_CONFIG_PATH,
    bundles_provider_config, layout_paths,
};
pub use variant::{Variant, WRONG_APP_VERSION, WRONG_CLI_VERSION};
