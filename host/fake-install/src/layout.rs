//! Where the pieces of a ZCode install live, and the simulator's files that fill them.

use zcode_contract::Os;

/// Path of the host index inside the host archive.
pub const HOST_INDEX_PATH: &str = "out/host/index.js";
/// Path of the host RPC module inside the host archive.
pub const HOST_RPC_CHUNK_PATH: &str = "out/host/chunk-KGXW6KHC.js";

/// The simulator's host index (`out/host/index.js`).
pub const HOST_INDEX: &[u8] =
    include_bytes!("../../../tests/fixtures/fake-zcode-host/out/host/index.js");
/// The simulator's host RPC module (`out/host/chunk-KGXW6KHC.js`).
pub const HOST_RPC_CHUNK: &[u8] =
    include_bytes!("../../../tests/fixtures/fake-zcode-host/out/host/chunk-KGXW6KHC.js");
/// The simulator's CLI / Agent entry (`zcode.cjs`), for desktop and runtime installs alike.
pub const CLI_ENTRY: &[u8] = include_bytes!("../../../tests/fixtures/fake-zcode-host/zcode.cjs");

/// Where ZCode (3.12 on) bundles its built-in provider config, relative to the directory that
/// holds the host archive (`resources`, or `Contents/Resources` on macOS).
pub const PROVIDER_CONFIG_PATH: &str = "config/provider/zcode-builtin.json";
/// The simulator's stand-in for that file (also the runtime's `agent/provider/…`).
pub const PROVIDER_CONFIG: &[u8] = include_bytes!(
    "../../../tests/fixtures/fake-zcode-host-3.12/config/provider/zcode-builtin.json"
);

/// Whether a desktop release bundles the built-in provider config its host needs at start-up:
/// ZCode 3.12 and later (3.12 reads it in its host, 3.14.5 hands it to the Agent).
pub fn bundles_provider_config(app_version: &str) -> bool {
    let mut parts = app_version.split('.').map(|part| part.parse::<u64>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= (3, 12),
        _ => false,
    }
}

/// Bundle metadata a ZCode desktop install holds, besides the platform key.
pub const METADATA_FIELDS: [(&str, &str); 3] = [
    ("runtime", "electron-node"),
    ("entry", "zcode.cjs"),
    ("source", "apps/zcode-cli/packages/cli/dist/zcode.cjs"),
];
/// Metadata key holding `<os>-<arch>` of the bundle.
pub const METADATA_PLATFORM_KEY: &str = "platform";

/// Install-relative paths (always `/`-separated) of one OS's desktop layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutPaths {
    pub executable: &'static str,
    pub cli_entry: &'static str,
    pub metadata: &'static str,
    pub host_archive: &'static str,
    /// macOS bundles carry `Contents/Info.plist` (app build, diagnostic only).
    pub info_plist: Option<&'static str>,
}

impl LayoutPaths {
    /// The directory that holds the host archive.
    pub fn resources(&self) -> &'static str {
        self.host_archive.rsplit_once('/').map_or("", |(resources, _)| resources)
    }
}

/// The ZCode desktop layout of `os`.
pub fn layout_paths(os: Os) -> LayoutPaths {
    match os {
        Os::Macos => LayoutPaths {
            executable: "Contents/Frameworks/ZCode Helper.app/Contents/MacOS/ZCode Helper",
            cli_entry: "Contents/Resources/glm/zcode.cjs",
            metadata: "Contents/Resources/glm/.node-bundle-meta.json",
            host_archive: "Contents/Resources/app.asar",
            info_plist: Some("Contents/Info.plist"),
        },
        Os::Linux => LayoutPaths {
            executable: "zcode",
            cli_entry: "resources/glm/zcode.cjs",
            metadata: "resources/glm/.node-bundle-meta.json",
            host_archive: "resources/app.asar",
            info_plist: None,
        },
        Os::Windows => LayoutPaths {
            executable: "ZCode.exe",
            cli_entry: "resources/glm/zcode.cjs",
            metadata: "resources/glm/.node-bundle-meta.json",
            host_archive: "resources/app.asar",
            info_plist: None,
        },
    }
}

/// What an extracted AppImage (`squashfs-root/`) holds besides the Linux layout.
pub const APPIMAGE_FILES: [&str; 2] = ["AppRun", "zcode.desktop"];
/// The Windows uninstaller beside `ZCode.exe`; the uninstall entry names it.
pub const WINDOWS_UNINSTALLER: &str = "Uninstall ZCode.exe";
/// The product code of ZCode's Windows installer: the uninstall entry's key name.
pub const WINDOWS_PRODUCT_CODE: &str = "268ce9e6-a30b-5890-ad18-d4b3ebba5377";

/// The runtime directory of a standalone runtime folder (the archive's top directory).
pub const RUNTIME_DIR: &str = "zcode";
/// The runtime's package file, relative to the runtime directory.
pub const RUNTIME_PACKAGE: &str = "package.json";
/// The runtime package file's `name`.
pub const RUNTIME_PACKAGE_NAME: &str = "zcode-runtime";
/// The Services Server entry, relative to the runtime directory.
pub const RUNTIME_SERVER_PATH: &str = "server/remote/zcode-server.cjs";
/// The Agent entry, relative to the runtime directory.
pub const RUNTIME_AGENT_PATH: &str = "agent/zcode.cjs";
/// The built-in provider table, relative to the runtime directory.
pub const RUNTIME_PROVIDER_CONFIG_PATH: &str = "agent/provider/zcode-builtin.json";
/// The runtime's own runner, relative to the runtime directory.
pub const RUNTIME_BIN_PATH: &str = "bin/zcode.mjs";

/// The simulator's stand-in Services Server entry.
pub const RUNTIME_SERVER: &[u8] =
    include_bytes!("../../../tests/fixtures/fake-zcode-runtime/server/remote/zcode-server.cjs");
/// The simulator's stand-in runtime runner.
pub const RUNTIME_BIN: &[u8] =
    include_bytes!("../../../tests/fixtures/fake-zcode-runtime/bin/zcode.mjs");

/// The Node executable of a standalone runtime folder on `os`, relative to the folder.
pub fn node_launcher(os: Os) -> &'static str {
    match os {
        Os::Windows => "node.exe",
        Os::Macos | Os::Linux => "node",
    }
}

/// The Paseo ZCode plugin's managed runtimes folder, relative to the data home
/// (`$XDG_DATA_HOME`, `~/.local/share`, or `%LOCALAPPDATA%` on Windows).
pub const PASEO_RUNTIMES: &str = "paseo-plugin-zcode-provider/runtimes";
/// The marker the plugin writes into each complete managed entry.
pub const PASEO_MARKER: &str = ".paseo-managed.json";
/// A stand-in for the runtime archive's SHA-256 the plugin records (synthetic).
pub const PASEO_FAKE_ARCHIVE_SHA256: &str =
    "5e5e5e5e5e5e0000000000000000000000000000000000000000000000000000";

/// The plugin's platform names: Node's, with `win32` spelled `win` (`linux-x64`, `win-arm64`).
pub fn paseo_platform(platform_tag: &str) -> String {
    match platform_tag.strip_prefix("win32-") {
        Some(arch) => format!("win-{arch}"),
        None => platform_tag.to_string(),
    }
}

/// `node-v<version>-<platform>`: a managed Node entry.
pub fn paseo_node_dir(node_version: &str, platform_tag: &str) -> String {
    format!("node-v{node_version}-{}", paseo_platform(platform_tag))
}

/// The Node executable inside a managed Node entry.
pub fn paseo_node_executable(platform_tag: &str) -> &'static str {
    if platform_tag.starts_with("win32-") { "node.exe" } else { "bin/node" }
}

/// `zcode-<version>-<first 12 hex of the archive SHA-256>`: a managed runtime entry.
pub fn paseo_runtime_dir(app_version: &str) -> String {
    format!("zcode-{app_version}-{}", &PASEO_FAKE_ARCHIVE_SHA256[..12])
}
