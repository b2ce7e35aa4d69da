//! Which installs this mapper drives, how their Agent is started, and where the core finds the
//! credentials the Agent asks for.

use zcode_contract::{
    AesGcmEncoding, AuthCommand, Contract, CredentialEncoding, CredentialLookup, CredentialSource,
    DataFile, DesktopLayout, FORK_METHOD, FactKind, FactSource, FilePin, JsonFact, LaunchPlan,
    Layout, LayoutKind, MapperError, Os, PresenceFact, Release, VerifiedInstall, VersionProbe,
};

use crate::account;

use crate::releases::{RELEASES, ReleaseInfo};
use zcode_mapper_sdk::json::internal;

#[allow(dead_code)] // the shared build script hashes the host fixtures this generation lacks
mod simulator {
    include!(concat!(env!("OUT_DIR"), "/simulator_hashes.rs"));
}

pub const PROTOCOL_ID: &str = "zcode-app-server";
/// The file role of the Agent entry in every release.
pub const CLI_ROLE: &str = "cli";
/// What an Agent of 3.15.1 and later reports in `setup` (see `connection::Identity`).
pub const CURRENT_IDENTITY: &str = "zcode-protocol/1 capabilities:independentPlanState";
/// The file role of the built-in provider table the Agent needs at start-up (pinned for the
/// simulated releases; real releases find it at the same place, `launch_plan`).
pub const PROVIDER_CONFIG_ROLE: &str = "provider-config";
/// Where Desktop bundles that table, relative to `<resources>`.
pub const PROVIDER_CONFIG_PATH: &str = "config/provider/zcode-builtin.json";
/// Release ids of the simulator's Desktop profiles start with this, then the app version.
pub const SIMULATED_RELEASE_PREFIX: &str = "zcode-desktop-sim-";
/// Credential source: the Coding Plan API key Desktop stores for the signed-in account.
pub const CODING_PLAN_KEY_SOURCE: &str = "coding-plan-api-key";
/// Credential source asked only for its presence: the signed-in account of a family.
pub const ACCOUNT_SOURCE: &str = "zcode-account";
/// ZCode's settings (plain JSON, no credential): the family and plan selected.
pub const SETTINGS_FILE: &str = ".zcode/v2/setting.json";
/// The Agent's Cron* tools call back into the host (`automation/*`), which zcode-acp does not
/// serve; they are hidden as the TypeScript bridge does (reference APP §1.3).
pub const DISALLOWED_TOOLS: &str = "CronCreate CronList CronUpdate CronDelete";

const METADATA_PAIRS: [(&str, &str); 3] = [
    ("runtime", "electron-node"),
    ("entry", "zcode.cjs"),
    ("source", "apps/zcode-cli/packages/cli/dist/zcode.cjs"),
];

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn desktop_layout(os: Os) -> Layout {
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
        cli_entry: format!("{resources}/glm/zcode.cjs"),
        metadata: format!("{resources}/glm/.node-bundle-meta.json"),
        metadata_pairs: pairs(&METADATA_PAIRS),
        metadata_platform_key: "platform".to_string(),
        metadata_entry_key: "entry".to_string(),
        host_archive: format!("{resources}/app.asar"),
    })
}

fn release(info: &ReleaseInfo) -> Release {
    Release {
        id: info.id.to_string(),
        kind: LayoutKind::Desktop,
        app_version: info.app_version.to_string(),
        cli_version: info.cli_version.to_string(),
        files: vec![FilePin {
            role: CLI_ROLE.to_string(),
            path: "glm/zcode.cjs".to_string(),
            sha256: info.cli_sha256.map(str::to_string),
            required_exports: Vec::new(),
        }],
        // The provider table the launch plan hands the Agent: read for the account push's
        // `basedOnZCodeBuiltinRevision`, never run; its hash is not public, so it is no pin.
        data_files: vec![DataFile {
            role: PROVIDER_CONFIG_ROLE.to_string(),
            path: PROVIDER_CONFIG_PATH.to_string(),
        }],
        // A pinned Agent needs no identity; an unpinned one must report what 3.15.1 reports.
        identity: match info.cli_sha256 {
            Some(_) => None,
            None => Some(CURRENT_IDENTITY.to_string()),
        },
        simulated: false,
    }
}

/// The simulator's play of a release (`--simulate-version desktop-<app>`): the same versions,
/// every file pinned to the simulator's fixtures, so no identity is needed. A fake install
/// whose `zcode.cjs` differs falls back to the real release, which checks the identity.
fn simulated_release(info: &ReleaseInfo) -> Release {
    let pin = |role: &str, path: &str, sha256: &str| FilePin {
        role: role.to_string(),
        path: path.to_string(),
        sha256: Some(sha256.to_string()),
        required_exports: Vec::new(),
    };
    Release {
        data_files: Default::default(),
        id: format!("{SIMULATED_RELEASE_PREFIX}{}", info.app_version),
        kind: LayoutKind::Desktop,
        app_version: info.app_version.to_string(),
        cli_version: info.cli_version.to_string(),
        files: vec![
            pin(CLI_ROLE, "glm/zcode.cjs", simulator::SIM_CLI_SHA256),
            pin(PROVIDER_CONFIG_ROLE, PROVIDER_CONFIG_PATH, simulator::SIM_PROVIDER_CONFIG_SHA256),
        ],
        identity: None,
        simulated: true,
    }
}

/// The Coding Plan key of the signed-in account: `account-provider:coding-plan:<account
/// provider id>:account:<user id>:api-key`, the user id read from `oauth:<family>:user_info`.
fn coding_plan_key() -> CredentialSource {
    CredentialSource {
        name: CODING_PLAN_KEY_SOURCE.to_string(),
        file: ".zcode/v2/credentials.json".to_string(),
        key: "account-provider:coding-plan:{provider}:account:{uid}:api-key".to_string(),
        lookups: vec![CredentialLookup {
            name: "uid".to_string(),
            key: "oauth:{family}:user_info".to_string(),
            field: "id".to_string(),
        }],
        encodings: credential_encodings(),
    }
}

/// `oauth:<family>:user_info`, the signed-in account of a family (Z3151
/// `packages/services/src/node.ts` `loadAccountIdentity`): only ever asked for its presence.
fn account_entry() -> CredentialSource {
    CredentialSource {
        name: ACCOUNT_SOURCE.to_string(),
        file: ".zcode/v2/credentials.json".to_string(),
        key: "oauth:{family}:user_info".to_string(),
        lookups: Vec::new(),
        encodings: credential_encodings(),
    }
}

/// What the account push is built from (`account::account_state`): no secret, only the
/// table's revision and path, two settings, and presence verdicts.
fn account_facts() -> Vec<FactSource> {
    let fact = |name: &str, kind| FactSource { name: name.to_string(), kind };
    let json = |file: &str, pointer: &str| JsonFact {
        file: file.to_string(),
        pointer: pointer.to_string(),
    };
    let presence = |source: &str, args: &[(&str, &str)]| {
        FactKind::CredentialPresence(PresenceFact { source: source.to_string(), args: pairs(args) })
    };
    let mut facts = vec![
        fact(
            account::TABLE_REVISION,
            FactKind::InstallJson(json(PROVIDER_CONFIG_ROLE, "/revision")),
        ),
        fact(account::TABLE_PATH, FactKind::InstallPath(PROVIDER_CONFIG_ROLE.to_string())),
        fact(account::FAMILY, FactKind::UserJson(json(SETTINGS_FILE, "/providerFamilyDomain"))),
        fact(
            account::SELECTIONS,
            FactKind::UserJson(json(SETTINGS_FILE, "/providerFamilyConnectionSelections")),
        ),
    ];
    for family in account::FAMILIES {
        let provider = account::provider_id(family);
        facts.push(fact(
            &format!("{}{family}", account::SIGNED_IN),
            presence(ACCOUNT_SOURCE, &[("family", family)]),
        ));
        facts.push(fact(
            &format!("{}{family}", account::PLAN_KEY),
            presence(CODING_PLAN_KEY_SOURCE, &[("provider", &provider), ("family", family)]),
        ));
    }
    facts
}

/// How Desktop stores its credentials, in the order the core tries them: `enc:v1` (AES-256-GCM
/// with a key from `ZCODE_CREDENTIAL_SECRET` or the machine seed, ZCode's
/// `credential-cipher.ts` as its public ports describe it; the core decrypts), `enc:v2` (3.18:
/// unlocked through the OS credential store, layout not public: refused, the fill's fallback
/// says so), then the clear.
pub fn credential_encodings() -> Vec<CredentialEncoding> {
    vec![
        CredentialEncoding::AesGcm(AesGcmEncoding {
            prefix: "enc:v1:".to_string(),
            key_env: "ZCODE_CREDENTIAL_SECRET".to_string(),
            fallback_seed: "zcode-credential-fallback:{platform}:{home}:{user}".to_string(),
        }),
        CredentialEncoding::Unreadable("enc:v2:".to_string()),
        CredentialEncoding::Plain,
    ]
}

pub fn contract() -> Contract {
    Contract {
        protocol_id: PROTOCOL_ID.to_string(),
        description: "ZCode Desktop 3.14.3-4.0.0 Agent (`zcode.cjs app-server --stdio`, CLI \
                      0.16.9-0.18.0): NDJSON, the V4 conversation next to legacy session/*, \
                      reverse requests"
            .to_string(),
        layouts: [Os::Macos, Os::Linux, Os::Windows].into_iter().map(desktop_layout).collect(),
        releases: RELEASES
            .iter()
            .map(release)
            .chain(RELEASES.iter().map(simulated_release))
            .collect(),
        cli_version_probe: VersionProbe {
            args: vec!["{cli-entry}".to_string(), "version".to_string()],
            env: pairs(&[("ELECTRON_RUN_AS_NODE", "1")]),
        },
        credentials_file: ".zcode/v2/credentials.json".to_string(),
        credential_sources: vec![coding_plan_key(), account_entry()],
        facts: account_facts(),
        // V4 `forkAssistant`; an Agent found without V4 refuses it (session/open.rs).
        offers: vec![FORK_METHOD.to_string()],
    }
}

/// `path` joined with `tail` using the separator the path already uses.
fn join(path: &str, tail: &[&str]) -> String {
    let sep = if path.contains('\\') && !path.contains('/') { '\\' } else { '/' };
    let mut out = path.trim_end_matches(['/', '\\']).to_string();
    for part in tail {
        out.push(sep);
        out.push_str(part);
    }
    out
}

/// The folder two levels above the CLI entry: `<resources>` of `<resources>/glm/zcode.cjs`.
fn resources_dir(cli_entry: &str) -> Result<&str, MapperError> {
    let mut rest = cli_entry;
    for _ in 0..2 {
        let cut = rest
            .rfind(['/', '\\'])
            .ok_or_else(|| internal("The verified CLI entry does not lie in <resources>/glm/"))?;
        rest = &rest[..cut];
    }
    Ok(rest)
}

fn known_release(install: &VerifiedInstall) -> Result<(), MapperError> {
    let simulated = |r: &ReleaseInfo| {
        install.release_id.strip_prefix(SIMULATED_RELEASE_PREFIX) == Some(r.app_version)
    };
    if RELEASES.iter().any(|r| r.id == install.release_id || simulated(r)) {
        Ok(())
    } else {
        Err(internal(format!(
            "Release {} is not part of this mapper's contract",
            install.release_id
        )))
    }
}

/// The Agent as Desktop starts it: its own Electron run as Node on `glm/zcode.cjs app-server
/// --stdio`, with the two provider tables Desktop hands it, and without the service-origin
/// overrides that would send signing and billing to a model provider's host.
pub fn launch_plan(install: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
    known_release(install)?;
    let resources = resources_dir(&install.cli_entry)?;
    let env = vec![
        ("ELECTRON_RUN_AS_NODE".to_string(), "1".to_string()),
        (
            "ZCODE_BUILTIN_PROVIDER_CONFIG_FILE".to_string(),
            join(resources, &PROVIDER_CONFIG_PATH.split('/').collect::<Vec<_>>()),
        ),
        (
            "ZCODE_PERSONAL_PROVIDER_CONFIG_FILE".to_string(),
            join(&install.home, &[".zcode", "v2", "provider_config.json"]),
        ),
        ("ZCODE_APP_VERSION".to_string(), install.app_version.clone()),
    ];
    Ok(LaunchPlan {
        args: vec![
            install.cli_entry.clone(),
            "app-server".to_string(),
            "--stdio".to_string(),
            "--disallowed-tools".to_string(),
            DISALLOWED_TOOLS.to_string(),
        ],
        env,
        env_remove: vec!["ZCODE_BASE_URL".to_string(), "ZCODE_ENDPOINT_ORIGIN".to_string()],
        cwd: install.home.clone(),
        stdin_preamble: Vec::new(),
        // The Agent reads nothing before its storage is ready, and buffers what comes earlier;
        // `setup` is the first request and waits for it.
        needs_handshake: false,
    })
}

/// ZCode's own login (`login --no-browser`) or logout, run by the bundled CLI.
pub fn auth_plan(
    install: &VerifiedInstall,
    command: AuthCommand,
) -> Result<LaunchPlan, MapperError> {
    known_release(install)?;
    let mut args = vec![install.cli_entry.clone()];
    match command {
        AuthCommand::Login => args.extend(["login".to_string(), "--no-browser".to_string()]),
        AuthCommand::Logout => args.push("logout".to_string()),
    }
    Ok(LaunchPlan {
        args,
        env: pairs(&[("ELECTRON_RUN_AS_NODE", "1")]),
        env_remove: vec!["ZCODE_BASE_URL".to_string(), "ZCODE_ENDPOINT_ORIGIN".to_string()],
        cwd: install.home.clone(),
        stdin_preamble: Vec::new(),
        needs_handshake: false,
    })
}
