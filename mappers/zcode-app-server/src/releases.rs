//! The releases this mapper drives, and what differs between them (`docs/mapper-zcode-app-server.md`
//! §1 gives the source of every entry).

/// What one release's Agent accepts beyond the common protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    /// The legacy mode enum has `guarded` (3.15.1 source); the 3.14.0 copy lacks it.
    pub guarded_mode: bool,
    /// Reverse requests race a V4 `resolveInteraction` on the same id and the first answer wins
    /// (`interaction-response-race.ts`, in the 3.14.0 and 3.15.1 sources). Without it the reply
    /// to the reverse request is the only answer.
    pub v4_resolve_interaction: bool,
}

/// An Agent that does not answer `runtime/capabilities`: no public release is known to be one.
pub const OLD: Profile = Profile { guarded_mode: false, v4_resolve_interaction: false };

/// The session id of the `guarded` probe: no session has it (ids are `sess_` + hex).
pub const GUARDED_PROBE_SESSION: &str = "zcode-acp-mode-probe";

impl Profile {
    /// The profile of an Agent that answered `runtime/capabilities` with `reply`. The mapper
    /// is not told its release; it reads what the Agent says. Every release answers the method
    /// (the 3.14.0 and 3.15.1 sources, and a live 3.14-era recording), so it marks the V4 race,
    /// not `guarded`: that needs [`Profile::with_guarded_probe`].
    pub fn detect(reply: Option<&serde_json::Value>) -> Profile {
        match reply {
            Some(caps) if caps.get("independentPlanState").is_some() => {
                Profile { guarded_mode: false, v4_resolve_interaction: true }
            }
            _ => OLD,
        }
    }

    /// Whether the Agent has `guarded`, from its answer to `session/setMode {sessionId:
    /// GUARDED_PROBE_SESSION, mode: "guarded"}`: the Agent checks the params before it looks the
    /// session up (3.15.1 `server-operations.ts` `setMode`), so an Agent without the mode
    /// refuses them (`-32602`) and one with it says the session is not there (`-32004`).
    /// Nothing else proves the mode, so anything else leaves it out.
    pub fn with_guarded_probe(self, reply: &zcode_contract::ReplyBody) -> Profile {
        let known = matches!(
            reply,
            zcode_contract::ReplyBody::Error(error) if error.kind == zcode_contract::ErrorKind::NotFound
        );
        Profile { guarded_mode: known, ..self }
    }
}

/// One release of the Desktop that bundles the Agent.
pub struct ReleaseInfo {
    pub id: &'static str,
    pub app_version: &'static str,
    pub cli_version: &'static str,
    /// SHA-256 of `resources/glm/zcode.cjs`, where a public source gives it.
    pub cli_sha256: Option<&'static str>,
    /// No public source shows the CLI version of this release: the value is an assumption,
    /// shared with the simulator (`docs/mapper-zcode-app-server.md` §1). An install printing
    /// another version is refused like any unknown release; nothing is guessed at run time.
    pub cli_version_assumed: bool,
}

pub const RELEASES: [ReleaseInfo; 11] = [
    ReleaseInfo {
        id: "zcode-desktop-3.14.3",
        app_version: "3.14.3",
        cli_version: "0.16.9",
        cli_sha256: None,
        cli_version_assumed: false,
    },
    ReleaseInfo {
        id: "zcode-desktop-3.14.4",
        app_version: "3.14.4",
        cli_version: "0.16.9",
        cli_sha256: None,
        cli_version_assumed: false,
    },
    ReleaseInfo {
        id: "zcode-desktop-3.14.5",
        app_version: "3.14.5",
        cli_version: "0.16.9",
        cli_sha256: Some("fad4c35c4c36ec210d8a06d3fa0e77de23c8545e2eb6ff90aea1eb38d1e6275f"),
        cli_version_assumed: false,
    },
    ReleaseInfo {
        id: "zcode-desktop-3.15.1",
        app_version: "3.15.1",
        cli_version: "0.16.9",
        cli_sha256: None,
        cli_version_assumed: false,
    },
    ReleaseInfo {
        id: "zcode-desktop-3.15.3",
        app_version: "3.15.3",
        cli_version: "0.16.9",
        cli_sha256: None,
        cli_version_assumed: true,
    },
    ReleaseInfo {
        id: "zcode-desktop-3.16.2",
        app_version: "3.16.2",
        cli_version: "0.17.0",
        cli_sha256: None,
        cli_version_assumed: false,
    },
    ReleaseInfo {
        id: "zcode-desktop-3.17.1",
        app_version: "3.17.1",
        cli_version: "0.17.1",
        cli_sha256: None,
        cli_version_assumed: true,
    },
    ReleaseInfo {
        id: "zcode-desktop-3.17.2",
        app_version: "3.17.2",
        cli_version: "0.17.1",
        cli_sha256: None,
        cli_version_assumed: false,
    },
    ReleaseInfo {
        id: "zcode-desktop-3.18.2",
        app_version: "3.18.2",
        cli_version: "0.17.2",
        cli_sha256: None,
        cli_version_assumed: true,
    },
    // Packaged from the official `ZCode-3.19.1-linux-{x64,arm64}.AppImage` (gentoo-zh overlay,
    // `dev-util/zcode-bin-3.19.1`); its CLI version is not public: the 0.17 line is assumed,
    // its predecessor's 0.17.2 (docs/mapper-zcode-app-server.md §1).
    ReleaseInfo {
        id: "zcode-desktop-3.19.1",
        app_version: "3.19.1",
        cli_version: "0.17.2",
        cli_sha256: None,
        cli_version_assumed: true,
    },
    ReleaseInfo {
        id: "zcode-desktop-4.0.0",
        app_version: "4.0.0",
        cli_version: "0.18.0",
        cli_sha256: None,
        cli_version_assumed: true,
    },
];

/// The modes a release offers (ACP id = ZCode id), in the Desktop's order.
pub fn modes(profile: Profile) -> &'static [(&'static str, &'static str, &'static str)] {
    const WITH_GUARDED: [(&str, &str, &str); 5] = [
        ("build", "Build", "Asks before changing files or running commands"),
        ("edit", "Edit", "Edits files without asking; asks before commands"),
        ("plan", "Plan", "Reads and plans; changes nothing until the plan is approved"),
        ("yolo", "Full access", "Runs everything without asking"),
        ("guarded", "Guarded", "Asks for everything; a failed question fails the tool"),
    ];
    if profile.guarded_mode { &WITH_GUARDED } else { &WITH_GUARDED[..4] }
}
