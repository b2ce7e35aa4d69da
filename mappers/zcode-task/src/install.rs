//! What the task protocol's releases share in their contracts and launch plans: the desktop
//! layout per OS with its bundle metadata, the pinned files, the CLI version probe, and how
//! login / logout run ZCode's CLI.

use zcode_mapper_sdk::contract::{
    AuthCommand, DesktopLayout, FilePin, LaunchPlan, Layout, LayoutKind, MapperError, Os, Release,
    VerifiedInstall, VersionProbe,
};
use zcode_mapper_sdk::json::internal;

/// The bundled CLI (`zcode.cjs`); its bytes pin the release like the host files.
pub const CLI_ROLE: &str = "cli";
pub const HOST_INDEX_ROLE: &str = "host-index";
pub const HOST_RPC_ROLE: &str = "host-rpc-module";

/// Pin paths are relative to the folder that holds the host archive (`resources`).
pub const CLI_PATH: &str = "glm/zcode.cjs";
pub const HOST_ARCHIVE: &str = "app.asar";
/// Inside the host archive.
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

/// Where a ZCode desktop install keeps its pieces on `os`, and what its metadata must hold.
pub fn layout(os: Os) -> Layout {
    let (executable, resources) = match os {
        Os::Macos => (
            "Contents/Frameworks/ZCode Helper.app/Contents/MacOS/ZCode Helper",
            "Contents/Resources",
        ),
        Os::Linux => ("zcode", "resources"),
        Os::Windows => ("ZCode.exe", "resources"),
    };
    Layout::Desktop(DesktopLayout {
        os,
        executable: executable.to_string(),
        cli_entry: format!("{resources}/{CLI_PATH}"),
        metadata: format!("{resources}/glm/.node-bundle-meta.json"),
        metadata_pairs: pairs(&METADATA),
        metadata_platform_key: METADATA_PLATFORM_KEY.to_string(),
        metadata_entry_key: METADATA_ENTRY_KEY.to_string(),
        host_archive: format!("{resources}/{HOST_ARCHIVE}"),
    })
}

/// Layouts of every OS ZCode ships for.
pub fn layouts() -> Vec<Layout> {
    [Os::Macos, Os::Linux, Os::Windows].into_iter().map(layout).collect()
}

pub fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(key, value)| (key.to_string(), value.to_string())).collect()
}

/// A file of a release, pinned by its hash.
pub fn pin(role: &str, path: &str, sha256: &str, required_exports: &[&str]) -> FilePin {
    FilePin {
        role: role.to_string(),
        path: path.to_string(),
        sha256: Some(sha256.to_string()),
        required_exports: required_exports.iter().map(|name| name.to_string()).collect(),
    }
}

/// A file inside the host archive, pinned by its hash.
pub fn archive_pin(role: &str, path: &str, sha256: &str, required_exports: &[&str]) -> FilePin {
    pin(role, &format!("{HOST_ARCHIVE}/{path}"), sha256, required_exports)
}

/// One release of the task protocol: its versions and the hashes of its files. The RPC
/// module's path and export names are part of it, because ZCode's bundler names and minifies
/// them anew in every build.
#[derive(Clone, Copy, Debug)]
pub struct HostRelease {
    pub id: &'static str,
    pub app_version: &'static str,
    pub cli_version: &'static str,
    /// SHA-256 of `glm/zcode.cjs`.
    pub cli: &'static str,
    /// SHA-256 of `out/host/index.js`.
    pub index: &'static str,
    /// The RPC module inside the archive, and its SHA-256.
    pub rpc_path: &'static str,
    pub rpc: &'static str,
    /// Export names of the message-port protocol, the channel client and the service factory.
    pub rpc_exports: [&'static str; 3],
    /// Further pinned files of a generation: (role, path beside the archive, SHA-256).
    pub extra: &'static [(&'static str, &'static str, &'static str)],
    pub simulated: bool,
}

impl HostRelease {
    /// The release as the contract lists it: every file pinned (the task protocol has no
    /// identity to report, so no file may go unpinned).
    pub fn release(&self) -> Release {
        let mut files = vec![
            pin(CLI_ROLE, CLI_PATH, self.cli, &[]),
            archive_pin(HOST_INDEX_ROLE, HOST_INDEX_PATH, self.index, &[]),
            archive_pin(HOST_RPC_ROLE, self.rpc_path, self.rpc, &self.rpc_exports),
        ];
        files.extend(self.extra.iter().map(|(role, path, sha256)| pin(role, path, sha256, &[])));
        Release {
            data_files: Default::default(),
            id: self.id.to_string(),
            kind: LayoutKind::Desktop,
            app_version: self.app_version.to_string(),
            cli_version: self.cli_version.to_string(),
            files,
            identity: None,
            simulated: self.simulated,
        }
    }
}

/// `<exe> <cli-entry> version`, with the executable run as Node.
pub fn cli_version_probe() -> VersionProbe {
    VersionProbe {
        args: vec!["{cli-entry}".to_string(), "version".to_string()],
        env: pairs(&[("ELECTRON_RUN_AS_NODE", "1")]),
    }
}

/// The absolute path the core verified for `role`.
pub fn file_for_role<'a>(install: &'a VerifiedInstall, role: &str) -> Result<&'a str, MapperError> {
    install.file(role).ok_or_else(|| internal(format!("The verified install has no `{role}` file")))
}

/// The release of `releases` the core verified the install against.
pub fn verified_release<'a>(
    releases: &[&'a HostRelease],
    install: &VerifiedInstall,
) -> Result<&'a HostRelease, MapperError> {
    check_desktop(install)?;
    releases.iter().copied().find(|release| release.id == install.release_id).ok_or_else(|| {
        internal(format!("Release {} is not part of this mapper's contract", install.release_id))
    })
}

/// The install must be a desktop app: the bridge runs in its Electron executable.
pub fn check_desktop(install: &VerifiedInstall) -> Result<(), MapperError> {
    match install.kind {
        LayoutKind::Desktop => Ok(()),
        LayoutKind::Runtime => Err(internal("The task protocol runs only in a desktop install")),
    }
}

/// ZCode's own interactive login (`login --no-browser`) or logout, run by the bundled CLI.
pub fn auth_plan(
    install: &VerifiedInstall,
    command: AuthCommand,
) -> Result<LaunchPlan, MapperError> {
    check_desktop(install)?;
    let mut args = vec![install.cli_entry.clone()];
    match command {
        AuthCommand::Login => args.extend(["login".to_string(), "--no-browser".to_string()]),
        AuthCommand::Logout => args.push("logout".to_string()),
    }
    Ok(LaunchPlan {
        args,
        env: pairs(&[("ELECTRON_RUN_AS_NODE", "1")]),
        cwd: install.install_root.clone(),
        ..LaunchPlan::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lays_out_each_os_as_zcode_ships_it() {
        let Layout::Desktop(mac) = layout(Os::Macos) else { panic!("desktop") };
        assert_eq!(
            mac.executable,
            "Contents/Frameworks/ZCode Helper.app/Contents/MacOS/ZCode Helper"
        );
        assert_eq!(mac.cli_entry, "Contents/Resources/glm/zcode.cjs");
        assert_eq!(mac.metadata, "Contents/Resources/glm/.node-bundle-meta.json");
        assert_eq!(mac.host_archive, "Contents/Resources/app.asar");
        let Layout::Desktop(linux) = layout(Os::Linux) else { panic!("desktop") };
        assert_eq!(
            (linux.executable.as_str(), linux.cli_entry.as_str()),
            ("zcode", "resources/glm/zcode.cjs")
        );
        let Layout::Desktop(windows) = layout(Os::Windows) else { panic!("desktop") };
        assert_eq!(
            (windows.executable.as_str(), windows.host_archive.as_str()),
            ("ZCode.exe", "resources/app.asar")
        );
        assert_eq!(
            windows.metadata_pairs,
            pairs(&[
                ("runtime", "electron-node"),
                ("entry", "zcode.cjs"),
                ("source", "apps/zcode-cli/packages/cli/dist/zcode.cjs")
            ])
        );
        assert_eq!(
            (windows.metadata_platform_key.as_str(), windows.metadata_entry_key.as_str()),
            ("platform", "entry")
        );
        assert_eq!(layouts().len(), 3);
    }

    #[test]
    fn pins_every_file_of_a_release() {
        let release = HostRelease {
            id: "r",
            app_version: "1.2.3",
            cli_version: "0.1.0",
            cli: "c",
            index: "i",
            rpc_path: "out/host/chunk-X.js",
            rpc: "p",
            rpc_exports: ["g", "i", "j"],
            extra: &[("provider-config", "config/provider/zcode-builtin.json", "e")],
            simulated: true,
        }
        .release();
        let files: Vec<(&str, &str, Option<&str>)> = release
            .files
            .iter()
            .map(|f| (f.role.as_str(), f.path.as_str(), f.sha256.as_deref()))
            .collect();
        assert_eq!(
            files,
            [
                ("cli", "glm/zcode.cjs", Some("c")),
                ("host-index", "app.asar/out/host/index.js", Some("i")),
                ("host-rpc-module", "app.asar/out/host/chunk-X.js", Some("p")),
                ("provider-config", "config/provider/zcode-builtin.json", Some("e")),
            ]
        );
        assert_eq!(release.files[2].required_exports, ["g", "i", "j"]);
        assert!(release.pinned() && release.identity.is_none() && release.simulated);
        assert_eq!(release.kind, LayoutKind::Desktop);
    }

    #[test]
    fn pins_archive_files_through_the_archive() {
        let pin = archive_pin(HOST_RPC_ROLE, "out/host/chunk-X.js", "ab", &["g"]);
        assert_eq!(pin.path, "app.asar/out/host/chunk-X.js");
        assert_eq!(
            (pin.sha256.as_deref(), pin.required_exports.as_slice()),
            (Some("ab"), &["g".to_string()][..])
        );
    }

    fn install(kind: LayoutKind) -> VerifiedInstall {
        VerifiedInstall { facts: Default::default(),
            install_root: "/Applications/ZCode.app".into(),
            kind,
            executable: "/Applications/ZCode.app/Contents/Frameworks/ZCode Helper.app/Contents/MacOS/ZCode Helper".into(),
            cli_entry: "/Applications/ZCode.app/Contents/Resources/glm/zcode.cjs".into(),
            host_archive: "/Applications/ZCode.app/Contents/Resources/app.asar".into(),
            release_id: "r".into(),
            app_version: "3.11.2".into(),
            cli_version: "0.16.5".into(),
            files: Vec::new(),
            unpinned: Vec::new(),
            home: "/Users/u".into(),
        }
    }

    #[test]
    fn runs_zcode_login_and_logout_with_the_verified_cli() {
        let login = auth_plan(&install(LayoutKind::Desktop), AuthCommand::Login).unwrap();
        assert_eq!(
            login.args,
            ["/Applications/ZCode.app/Contents/Resources/glm/zcode.cjs", "login", "--no-browser"]
        );
        assert_eq!(login.env, pairs(&[("ELECTRON_RUN_AS_NODE", "1")]));
        assert_eq!(login.cwd, "/Applications/ZCode.app");
        assert!(
            login.env_remove.is_empty()
                && login.stdin_preamble.is_empty()
                && !login.needs_handshake
        );
        let logout = auth_plan(&install(LayoutKind::Desktop), AuthCommand::Logout).unwrap();
        assert_eq!(logout.args[1..], ["logout"]);
        assert_eq!(
            auth_plan(&install(LayoutKind::Runtime), AuthCommand::Login).unwrap_err().message,
            "The task protocol runs only in a desktop install"
        );
    }
}
