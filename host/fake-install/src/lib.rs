//! Fake ZCode install roots for tests and the simulator.
//!
//! A fake install has the directory layout of a real ZCode install and the simulator's own
//! files, so discovery and the compatibility gate can be exercised end to end without ZCode:
//! - desktop apps ([`FakeLayout::Desktop`]): macOS `.app`, Linux `/opt/ZCode`, Windows x64 and
//!   arm64 with the uninstall entry ZCode's installer leaves (no `InstallLocation`, a quoted
//!   `UninstallString`), and an extracted AppImage ([`FakeLayout::AppImage`]);
//! - standalone runtimes: a folder holding the runtime directory `zcode/` and a `node`
//!   ([`FakeLayout::Runtime`]), and the Paseo ZCode plugin's managed runtimes folder
//!   ([`FakeLayout::PaseoManaged`]).
//!
//! Their executables (the Electron app, the Node) are `#!/bin/sh` launchers that hand every
//! invocation to a runner chosen by the caller (the simulator), telling it which install it
//! runs for: `<program> <args…> --install-root <root> -- <args given to the executable…>`,
//! with the environment the executable was started with. Asked what they are (`--version`,
//! `-p process.versions.electron`) they answer themselves, as a Node or an Electron would. For
//! [`Variant::WrongCliVersion`] the launcher also exports `ZCODE_SIM_CLI_VERSION`, which the
//! runner must report as its CLI version when asked `<cli-entry> version`.
//!
//! The app version is in the files the simulator reads it from: `package.json` of the host
//! archive (desktop) and `zcode/package.json` (`{"name":"zcode-runtime","version":…}`).
//!
//! Broken [`Variant`]s produce the install defects the gate must refuse. Files come from
//! `tests/fixtures/fake-zcode-host/`, `tests/fixtures/fake-zcode-host-3.12/` (the provider
//! table) and `tests/fixtures/fake-zcode-runtime/`, embedded at build time; nothing here
//! depends on their content.

mod builder;
mod cli;
mod launcher;
mod layout;
mod variant;

pub use builder::{
    BuiltInstall, FakeInstall, FakeInstallBuilder, FakeInstallError, FakeLayout, WindowsScope,
    write_appimage_file,
};
pub use cli::main_with_args;
pub use launcher::{
    ELECTRON_CHECK_ARGS, FAKE_ELECTRON_NODE_VERSION, NODE_VERSION_ARGS, Runner, SIM_CLI_VERSION_ENV,
};
pub use layout::{
    APPIMAGE_FILES, CLI_ENTRY, HOST_INDEX, HOST_INDEX_PATH, HOST_RPC_CHUNK, HOST_RPC_CHUNK_PATH,
    LayoutPaths, METADATA_FIELDS, METADATA_PLATFORM_KEY, PASEO_FAKE_ARCHIVE_SHA256, PASEO_MARKER,
    PASEO_RUNTIMES, PROVIDER_CONFIG, PROVIDER_CONFIG_PATH, RUNTIME_AGENT_PATH, RUNTIME_BIN,
    RUNTIME_BIN_PATH, RUNTIME_DIR, RUNTIME_PACKAGE, RUNTIME_PACKAGE_NAME,
    RUNTIME_PROVIDER_CONFIG_PATH, RUNTIME_SERVER, RUNTIME_SERVER_PATH, WINDOWS_PRODUCT_CODE,
    WINDOWS_UNINSTALLER, bundles_provider_config, layout_paths, node_launcher, paseo_node_dir,
    paseo_node_executable, paseo_platform, paseo_runtime_dir,
};
pub use variant::{
    FAKE_ELECTRON_VERSION, NEWER_APP_VERSION, NODE_VERSION, OLD_NODE_VERSION, Variant,
    WRONG_APP_VERSION, WRONG_CLI_VERSION,
};
