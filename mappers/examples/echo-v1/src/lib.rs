//! The echo mapper, worked through in `docs/writing-a-mapper.md`: a made-up protocol whose host
//! is `host/server.mjs`. This file says which installs it drives and how their host starts.

pub mod connection;
pub mod session;
pub mod wire;

use zcode_mapper_sdk::contract::{Layout, LayoutKind, Release, RuntimeLayout};
use zcode_mapper_sdk::install::version_probe;
use zcode_mapper_sdk::install::{known_release, pairs, pin, plain_credential, strings};
use zcode_mapper_sdk::prelude::*;

pub const RELEASE_ID: &str = "echo-host-1.0.0";
pub const TOKEN_SOURCE: &str = "echo-token";
const CREDENTIALS_FILE: &str = ".echo-host/credentials.json";

pub struct Echo;

/// The rest (no login of its own, for one) is the SDK's default.
impl zcode_mapper_sdk::Mapper for Echo {
    const NAME: &'static str = "echo-v1";
    type Connection = connection::Connection;
    type Session = session::Session;

    /// A runtime folder (`package.json` named `zcode-echo-host`, `server.mjs`) run by Node 20
    /// or newer. `server.mjs` is not pinned: the host proves what it is in its hello instead.
    fn contract() -> Contract {
        Contract {
            protocol_id: Self::NAME.into(),
            description: "The echo host, the mapper SDK's worked example".into(),
            layouts: vec![Layout::Runtime(RuntimeLayout {
                runtime_dir: ".".into(),
                package_file: "package.json".into(),
                package_pairs: pairs(&[("name", "zcode-echo-host")]),
                cli_entry: "server.mjs".into(),
                node_candidates: strings(&["bin/node"]),
                min_node_version: "20.0.0".into(),
            })],
            releases: vec![Release {
                data_files: Default::default(),
                id: RELEASE_ID.into(),
                kind: LayoutKind::Runtime,
                app_version: "1.0.0".into(),
                cli_version: "1.0.0".into(),
                files: vec![pin("cli", "server.mjs", None)],
                identity: Some("echo-host/1.0.0".into()),
                simulated: false,
            }],
            cli_version_probe: version_probe(&["{cli-entry}", "--version"]),
            credentials_file: CREDENTIALS_FILE.into(),
            credential_sources: vec![plain_credential(TOKEN_SOURCE, CREDENTIALS_FILE, "token")],
            ..Contract::default()
        }
    }

    /// `node server.mjs` in the runtime folder, without `NODE_OPTIONS` (it could load code into
    /// the host). The host greets first: the core waits for the handshake.
    fn launch_plan(install: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
        known_release(install, &[RELEASE_ID])?;
        Ok(LaunchPlan {
            args: vec![install.cli_entry.clone()],
            env_remove: strings(&["NODE_OPTIONS"]),
            cwd: install.host_archive.clone(),
            needs_handshake: true,
            ..LaunchPlan::default()
        })
    }
}

zcode_mapper_sdk::register_mapper!(pub struct EchoMapper(Echo), source: "native:echo-v1");

#[cfg(test)]
mod tests {
    use zcode_mapper_sdk::Mapper as _;
    use zcode_mapper_sdk::contract::{AuthCommand, ErrorKind};

    use super::*;

    fn install() -> VerifiedInstall {
        VerifiedInstall {
            facts: Default::default(),
            install_root: "/opt/echo".into(),
            kind: LayoutKind::Runtime,
            executable: "/usr/bin/node".into(),
            cli_entry: "/opt/echo/server.mjs".into(),
            host_archive: "/opt/echo".into(),
            release_id: RELEASE_ID.into(),
            app_version: "1.0.0".into(),
            cli_version: "1.0.0".into(),
            files: vec![("cli".into(), "/opt/echo/server.mjs".into())],
            unpinned: vec!["cli".into()],
            home: "/home/u".into(),
        }
    }

    #[test]
    fn an_unpinned_release_names_the_identity_its_host_must_report() {
        let contract = Echo::contract();
        let release = contract.release(RELEASE_ID).unwrap();
        assert!(!release.pinned());
        assert_eq!(release.identity.as_deref(), Some("echo-host/1.0.0"));
        let runtime = contract.runtime_layout().unwrap();
        assert_eq!(
            (runtime.cli_entry.as_str(), runtime.min_node_version.as_str()),
            ("server.mjs", "20.0.0")
        );
        assert_eq!(contract.credential_source("echo-token").unwrap().key, "token");
    }

    #[test]
    fn runs_the_server_script_in_the_runtime_folder() {
        let plan = Echo::launch_plan(&install()).unwrap();
        assert_eq!(plan.args, ["/opt/echo/server.mjs"]);
        assert_eq!((plan.cwd.as_str(), plan.needs_handshake), ("/opt/echo", true));
        assert_eq!(plan.env_remove, ["NODE_OPTIONS"]);
        let other = VerifiedInstall { release_id: "other".into(), ..install() };
        assert!(Echo::launch_plan(&other).is_err());
        let login = Echo::auth_plan(&install(), AuthCommand::Login).unwrap_err();
        assert_eq!(login.kind, ErrorKind::Unsupported);
    }
}
