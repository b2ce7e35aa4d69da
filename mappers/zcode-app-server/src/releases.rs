//! The releases this mapper drives, and what differs between them (`docs/mapper-zcode-app-server.md`
//! §1 gives the source of every entry).

/// What one release's Agent accepts beyond the common protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    /// The legacy mode enum has `guarded` (3.15.1 source); older copies lack it.
    pub guarded_mode: bool,
    /// Reverse requests race a V4 `resolveInteraction` on the same id and the first answer wins
    /// (3.15.1 `interaction-response-race.ts`). Without it the reply to the reverse request is
    /// the only answer.
    pub v4_resolve_interaction: bool,
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

/// Before `runtime/capabilities` (3.14.x as far as the facts go).
pub const OLD: Profile = Profile { guarded_mode: false, v4_resolve_interaction: false };
/// 3.15.1 source, assumed for 0.17.x, 3.18 and 4.0 (no public diff says otherwise).
pub const CURRENT: Profile = Profile { guarded_mode: true, v4_resolve_interaction: true };

impl Profile {
    /// The profile a host that answered `runtime/capabilities` with `reply` has: the method came
    /// with 3.15.1 together with `guarded` and the V4 interaction race, so its presence is the
    /// marker (the mapper is not told the release; it reads what the host says).
    pub fn detect(reply: Option<&serde_json::Value>) -> Profile {
        match reply {
            Some(caps) if caps.get("independentPlanState").is_some() => CURRENT,
            _ => OLD,
        }
    }
}

pub const RELEASES: [ReleaseInfo; 10] = [
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
