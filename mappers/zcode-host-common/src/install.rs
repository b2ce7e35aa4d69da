//! What the desktop-host generations' contracts and launch plans share: the install layout per
//! OS, the bundle metadata, the CLI version probe, and how login / logout run ZCode's CLI.

use zcode_contract::{
    AuthCommand, LaunchPlan, Layout, MapperError, Os, VerifiedInstall, VersionProbe,
};

use crate::json::internal;

pub const HOST_INDEX_ROLE: &str = "host-index";
pub const HOST_RPC_ROLE: &str = "host-rpc-module";
pub const HOST_INDEX_PATH: &str = "out/host/index.js";

/// Bundle metadata a ZCode desktop install holds, besides the platform key.
pub const METADATA: [(&str, &str); 3] = [
    ("runtime", "electron-node"),
    ("entry", "zcode.cjs"),
    ("source", "apps/zcode-cli/packages/cli/dist/zcode.cjs"),
];
pub const METADATA_PLATFORM_KEY: &str = "platform";
pub const METADATA_ENTRY_KEY: &str = "entry";
/// The CLI's credentials file, relative to the user's home (presence only).
pub const CREDENTIALS_FILE: &str = ".zcode/v2/credentials.json";

/// Where a ZCode desktop install keeps its pieces on `os`.
pub fn layout(os: Os) -> Layout {
    let (executable, resources) = match os {
        Os::Macos => (
            "Contents/Frameworks/ZCode Helper.app/Contents/MacOS/ZCode Helper",
            "Contents/Resources",
        ),
        Os::Linux => ("zcode", "resources"),
        Os::Windows => ("ZCode.exe", "resources"),
    };
    Layout {
        os,
        executable: executable.to_string(),
        cli_entry: format!("{resources}/glm/zcode.cjs"),
        metadata: format!("{resources}/glm/.node-bundle-meta.json"),
        host_archive: format!("{resources}/app.asar"),
    }
}

/// Layouts of every OS ZCode ships for.
pub fn layouts() -> Vec<Layout> {
    [Os::Macos, Os::Linux, Os::Windows].into_iter().map(layout).collect()
}

pub fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(key, value)| (key.to_string(), value.to_string())).collect()
}

/// `<exe> <cli-entry> version`, with the executable run as Node.
pub fn cli_version_probe() -> VersionProbe {
    VersionProbe {
        args: vec!["{cli-entry}".to_string(), "version".to_string()],
        env: pairs(&[("ELECTRON_RUN_AS_NODE", "1")]),
    }
}

/// The executable relative to the install root (the core refuses any other program).
pub fn relative_executable(install: &VerifiedInstall) -> Result<String, MapperError> {
    let root = install.install_root.trim_end_matches(['/', '\\']);
    install
        .executable
        .strip_prefix(root)
        .and_then(|rest| rest.strip_prefix(['/', '\\']))
        .filter(|rest| !rest.is_empty())
        .map(str::to_string)
        .ok_or_else(|| internal("The verified executable is not inside the install root"))
}

/// The absolute path the core verified for `role`.
pub fn file_for_role<'a>(install: &'a VerifiedInstall, role: &str) -> Result<&'a str, MapperError> {
    install
        .files
        .iter()
        .find(|(name, _)| name == role)
        .map(|(_, path)| path.as_str())
        .ok_or_else(|| internal(format!("The verified install has no `{role}` file")))
}

/// ZCode's own interactive login (`login --no-browser`) or logout, run by the bundled CLI.
pub fn auth_plan(
    install: &VerifiedInstall,
    command: AuthCommand,
) -> Result<LaunchPlan, MapperError> {
    let mut args = vec![install.cli_entry.clone()];
    match command {
        AuthCommand::Login => args.extend(["login".to_string(), "--no-browser".to_string()]),
        AuthCommand::Logout => args.push("logout".to_string()),
    }
    Ok(LaunchPlan {
        program: relative_executable(install)?,
        args,
        env: pairs(&[("ELECTRON_RUN_AS_NODE", "1")]),
        cwd: install.install_root.clone(),
        stdin_preamble: Vec::new(),
        needs_handshake: false,
    })
}
