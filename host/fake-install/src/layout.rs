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
/// The simulator's CLI entry (`zcode.cjs`).
pub const CLI_ENTRY: &[u8] = include_bytes!("../../../tests/fixtures/fake-zcode-host/zcode.cjs");

/// Where ZCode 3.12 bundles its built-in provider config, relative to the directory that holds
/// the host archive (`resources`, or `Contents/Resources` on macOS).
pub const PROVIDER_CONFIG_PATH: &str = "config/provider/zcode-builtin.json";
/// The simulator's stand-in for that file.
pub const PROVIDER_CONFIG: &[u8] = include_bytes!(
    "../../../tests/fixtures/fake-zcode-host-3.12/config/provider/zcode-builtin.json"
);

/// Whether a release bundles the built-in provider config its host needs at start-up (ZCode
/// 3.12: the host reads it in `init-local`).
pub fn bundles_provider_config(app_version: &str) -> bool {
    app_version.starts_with("3.12.")
}

/// Bundle metadata a ZCode 3.11 install holds, besides the platform key.
pub const METADATA_FIELDS: [(&str, &str); 3] = [
    ("runtime", "electron-node"),
    ("entry", "zcode.cjs"),
    ("source", "apps/zcode-cli/packages/cli/dist/zcode.cjs"),
];
/// Metadata key holding `<os>-<arch>` of the bundle.
pub const METADATA_PLATFORM_KEY: &str = "platform";

/// Install-relative paths (always `/`-separated) of one OS layout.
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

/// The ZCode install layout of `os`.
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
