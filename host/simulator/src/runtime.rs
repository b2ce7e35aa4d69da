//! The simulated runtime child: dispatches the argv the ZCode executable received, as the
//! real Electron-run-as-Node runtime would (a bundled CLI command, or `-e <script>`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::app_server::{self, AppServerProfile};
use crate::common::process::fail;
use crate::task::profile::{PROFILES, Profile};
use crate::task::{bridge_script as bridge, cli};

/// Name of the bundled CLI entry inside the install.
const CLI_ENTRY: &str = "zcode.cjs";

/// Runs the simulated runtime for `argv` (the arguments after the executable's name).
pub fn run_runtime(install_root: &Path, argv: Vec<OsString>) -> ExitCode {
    // A zcode-runtime root (plain Node, Services Server) rather than a Desktop install.
    if let Some(code) = crate::services::run_if_runtime(install_root, &argv) {
        return code;
    }
    let release = match Release::detect(install_root) {
        Ok(release) => release,
        Err(message) => return fail(1, &format!("zcode-sim: {message}")),
    };
    if std::env::var("ELECTRON_RUN_AS_NODE").as_deref() != Ok("1") {
        return fail(
            1,
            "zcode-sim: ELECTRON_RUN_AS_NODE=1 is required (without it the real executable \
             would start the desktop app instead of running Node)",
        );
    }
    let args: Vec<String> = argv.iter().map(|arg| arg.to_string_lossy().into_owned()).collect();
    match args.first().map(String::as_str) {
        Some("-e") if args.len() >= 2 => match release {
            Release::Host(profile) => bridge::run(install_root, profile),
            Release::AppServer(profile) => fail(
                2,
                &format!(
                    "zcode-sim: the host bridge (-e) is not simulated for ZCode {}; run \
                     zcode.cjs app-server --stdio",
                    profile.app_version
                ),
            ),
        },
        Some("-e") => fail(9, "zcode-sim: -e requires an argument"),
        Some(entry) if Path::new(entry).file_name().is_some_and(|name| name == CLI_ENTRY) => {
            if !Path::new(entry).is_file() {
                return fail(1, &format!("Error: Cannot find module '{entry}'"));
            }
            match release {
                Release::Host(profile) => cli::run(profile, &args[1..]),
                Release::AppServer(profile) => app_server::run(install_root, profile, &args[1..]),
            }
        }
        _ => fail(2, &format!("zcode-sim: unsupported runtime arguments: {args:?}")),
    }
}

/// Parses `--install-root <root> -- <argv...>` (the runner's own command line, without the
/// program name) and runs the runtime.
pub fn run_runner(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let mut args = args.into_iter();
    let usage = "usage: zcode-sim --install-root <root> -- <runtime argv...>";
    let (Some(flag), Some(root), Some(separator)) = (args.next(), args.next(), args.next()) else {
        return fail(2, usage);
    };
    if flag != "--install-root" || separator != "--" {
        return fail(2, usage);
    }
    run_runtime(Path::new(&root), args.collect())
}

/// Where `package.json` may live inside an install root (Linux/Windows, then macOS layout).
const PACKAGE_JSON_CANDIDATES: &[&str] =
    &["resources/app.asar/package.json", "Contents/Resources/app.asar/package.json"];

/// The release an install root holds: a host-bridge release or an app-server one.
#[derive(Debug, Clone, Copy)]
pub enum Release {
    Host(&'static Profile),
    AppServer(&'static AppServerProfile),
}

impl Release {
    /// The release for the app version found in the install root.
    pub fn detect(install_root: &Path) -> Result<Release, String> {
        let version = read_app_version(install_root)?;
        if let Some(profile) =
            PROFILES.iter().copied().find(|profile| profile.app_version == version)
        {
            return Ok(Release::Host(profile));
        }
        if let Some(profile) = crate::app_server::for_app_version(&version) {
            return Ok(Release::AppServer(profile));
        }
        let host = PROFILES.iter().map(|profile| profile.app_version);
        let supported: Vec<&str> =
            host.chain(crate::app_server::PROFILES.iter().map(|p| p.app_version)).collect();
        Err(format!(
            "no simulator profile for ZCode {version} (supported: {})",
            supported.join(", ")
        ))
    }
}

fn read_app_version(install_root: &Path) -> Result<String, String> {
    let path = package_json_path(install_root).ok_or_else(|| {
        format!(
            "no app.asar/package.json under {} (asar archives are not supported; the simulator \
             needs an unpacked app.asar directory)",
            install_root.display()
        )
    })?;
    let text = std::fs::read_to_string(&path)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    let package: serde_json::Value = serde_json::from_str(&text)
        .map_err(|error| format!("invalid JSON in {}: {error}", path.display()))?;
    package
        .get("version")
        .and_then(|version| version.as_str())
        .map(str::to_owned)
        .ok_or_else(|| format!("{} has no string `version`", path.display()))
}

fn package_json_path(install_root: &Path) -> Option<PathBuf> {
    PACKAGE_JSON_CANDIDATES
        .iter()
        .map(|relative| install_root.join(relative))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::profile::{Channel, ModelShape, PlanState, ZCODE_3_11_2};

    /// The host-bridge profile of an install, as the bridge would load it.
    fn host_profile(root: &Path) -> Result<&'static Profile, String> {
        match Release::detect(root)? {
            Release::Host(profile) => Ok(profile),
            Release::AppServer(profile) => {
                Err(format!("ZCode {} runs app-server", profile.app_version))
            }
        }
    }

    fn install_with(relative: &str, body: &str) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
        root
    }

    #[test]
    fn detects_linux_and_macos_layouts() {
        let linux = install_with("resources/app.asar/package.json", r#"{"version":"3.11.2"}"#);
        assert_eq!(host_profile(linux.path()).unwrap().cli_version, "0.16.5");
        let mac =
            install_with("Contents/Resources/app.asar/package.json", r#"{"version":"3.11.2"}"#);
        assert_eq!(host_profile(mac.path()).unwrap().app_version, "3.11.2");
    }

    #[test]
    fn refuses_unknown_versions_and_missing_packages() {
        let unknown = install_with("resources/app.asar/package.json", r#"{"version":"3.13.0"}"#);
        let error = host_profile(unknown.path()).unwrap_err();
        assert!(error.contains("no simulator profile for ZCode 3.13.0"), "{error}");
        assert!(error.contains("(supported: 3.11.2, 3.12.3, 3.14.3, "), "{error}");
        assert!(error.ends_with("3.18.2, 3.19.1, 4.0.0)"), "{error}");
        let empty = tempfile::tempdir().unwrap();
        assert!(host_profile(empty.path()).unwrap_err().contains("no app.asar/package.json"));
    }

    #[test]
    fn app_server_releases_are_told_apart_from_host_ones() {
        let desktop = install_with("resources/app.asar/package.json", r#"{"version":"3.18.2"}"#);
        let Ok(Release::AppServer(profile)) = Release::detect(desktop.path()) else {
            panic!("3.18.2 is an app-server release");
        };
        assert_eq!(profile.name, "desktop-3.18.2");
        assert!(host_profile(desktop.path()).unwrap_err().contains("app-server"));
        let mac =
            install_with("Contents/Resources/app.asar/package.json", r#"{"version":"4.0.0"}"#);
        assert!(matches!(Release::detect(mac.path()), Ok(Release::AppServer(_))));
        let host = install_with("resources/app.asar/package.json", r#"{"version":"3.12.3"}"#);
        assert!(matches!(Release::detect(host.path()), Ok(Release::Host(_))));
    }

    #[test]
    fn channel_tables_split_agent_and_task_methods() {
        assert!(ZCODE_3_11_2.serves(Channel::Agent, "readWorkspaceState"));
        assert!(!ZCODE_3_11_2.serves(Channel::Agent, "stopGeneration"));
        assert!(ZCODE_3_11_2.serves(Channel::Task, "stopGeneration"));
        assert!(!ZCODE_3_11_2.serves(Channel::ModelSelection, "getView"));
    }

    #[test]
    fn the_3_12_3_profile_replaces_the_workspace_state() {
        let linux = install_with("resources/app.asar/package.json", r#"{"version":"3.12.3"}"#);
        let profile = host_profile(linux.path()).unwrap();
        assert_eq!((profile.app_version, profile.cli_version), ("3.12.3", "0.16.5"));
        assert!(!profile.serves(Channel::Agent, "readWorkspaceState"));
        assert!(!profile.bridge_agent_methods.contains(&"readWorkspaceState"));
        assert!(profile.serves(Channel::Agent, "readWorkspacePresentation"));
        assert!(profile.serves(Channel::ModelSelection, "getView"));
        assert_eq!(
            (profile.plan, profile.models, profile.needs_provider_config),
            (PlanState::IndependentFlag, ModelShape::Selection, true)
        );
        assert_eq!(
            (ZCODE_3_11_2.plan, ZCODE_3_11_2.models, ZCODE_3_11_2.needs_provider_config),
            (PlanState::Mode, ModelShape::Refs, false)
        );
    }
}
