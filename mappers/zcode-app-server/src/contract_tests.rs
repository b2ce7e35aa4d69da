use zcode_contract::{AuthCommand, Layout, Os, VerifiedInstall};

use crate::contract::*;

fn install(release: &str) -> VerifiedInstall {
    VerifiedInstall {
        facts: Default::default(),
        install_root: "/opt/ZCode".into(),
        kind: zcode_contract::LayoutKind::Desktop,
        executable: "/opt/ZCode/zcode".into(),
        cli_entry: "/opt/ZCode/resources/glm/zcode.cjs".into(),
        host_archive: "/opt/ZCode/resources/app.asar".into(),
        release_id: release.into(),
        app_version: "3.17.2".into(),
        cli_version: "0.17.1".into(),
        files: vec![("cli".into(), "/opt/ZCode/resources/glm/zcode.cjs".into())],
        unpinned: vec!["cli".into()],
        home: "/home/u".into(),
    }
}

#[test]
fn lists_each_release_with_its_pin_or_identity() {
    let contract = contract();
    assert_eq!(contract.protocol_id, "zcode-app-server");
    let ids: Vec<_> = contract
        .releases
        .iter()
        .filter(|r| !r.simulated)
        .map(|r| (r.app_version.as_str(), r.cli_version.as_str()))
        .collect();
    assert_eq!(
        ids,
        [
            ("3.14.3", "0.16.9"),
            ("3.14.4", "0.16.9"),
            ("3.14.5", "0.16.9"),
            ("3.15.1", "0.16.9"),
            ("3.15.3", "0.16.9"),
            ("3.16.2", "0.17.0"),
            ("3.17.1", "0.17.1"),
            ("3.17.2", "0.17.1"),
            ("3.18.2", "0.17.2"),
            ("3.19.1", "0.17.2"),
            ("4.0.0", "0.18.0")
        ]
    );
    // The CLI versions no public source shows are marked, and only those.
    let assumed: Vec<_> = crate::releases::RELEASES
        .iter()
        .filter(|r| r.cli_version_assumed)
        .map(|r| r.app_version)
        .collect();
    assert_eq!(assumed, ["3.15.3", "3.17.1", "3.18.2", "3.19.1", "4.0.0"]);
    let pinned = contract.release("zcode-desktop-3.14.5").unwrap();
    assert_eq!(pinned.files[0].path, "glm/zcode.cjs");
    assert_eq!(
        pinned.files[0].sha256.as_deref(),
        Some("fad4c35c4c36ec210d8a06d3fa0e77de23c8545e2eb6ff90aea1eb38d1e6275f")
    );
    assert_eq!(pinned.identity, None);
    let real = contract.releases.iter().filter(|r| !r.simulated);
    for release in real.filter(|r| r.id != "zcode-desktop-3.14.5") {
        assert!(!release.pinned() && !release.simulated, "{}", release.id);
        assert_eq!(release.identity.as_deref(), Some(CURRENT_IDENTITY), "{}", release.id);
    }
    assert_eq!(
        contract.credential_sources[0].key,
        "account-provider:coding-plan:{provider}:account:{uid}:api-key"
    );
    assert_eq!(contract.cli_version_probe.args, ["{cli-entry}", "version"]);
    // The core decrypts enc:v1, refuses enc:v2 (OS credential store) and reads the clear.
    let encodings = &contract.credential_sources[0].encodings;
    assert!(matches!(&encodings[0], zcode_contract::CredentialEncoding::AesGcm(form)
        if form.prefix == "enc:v1:" && form.key_env == "ZCODE_CREDENTIAL_SECRET"
            && form.fallback_seed == "zcode-credential-fallback:{platform}:{home}:{user}"));
    assert_eq!(encodings[1], zcode_contract::CredentialEncoding::Unreadable("enc:v2:".into()));
    assert_eq!(encodings[2], zcode_contract::CredentialEncoding::Plain);
}

fn sha256_hex(path: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    let bytes = std::fs::read(path).unwrap();
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn pins_a_simulated_twin_of_every_release_to_the_simulators_files() {
    let contract = contract();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let cli = sha256_hex(&fixtures.join("fake-zcode-host/zcode.cjs"));
    let table =
        sha256_hex(&fixtures.join("fake-zcode-host-3.12/config/provider/zcode-builtin.json"));
    let (simulated, real): (Vec<_>, Vec<_>) = contract.releases.iter().partition(|r| r.simulated);
    assert_eq!(simulated.len(), real.len());
    for (twin, real) in simulated.iter().zip(&real) {
        assert_eq!(twin.id, format!("zcode-desktop-sim-{}", real.app_version));
        assert_eq!((&twin.app_version, &twin.cli_version), (&real.app_version, &real.cli_version));
        assert!(twin.pinned() && twin.identity.is_none(), "{}", twin.id);
        let pins: Vec<_> = twin
            .files
            .iter()
            .map(|f| (f.role.as_str(), f.path.as_str(), f.sha256.clone().unwrap()))
            .collect();
        assert_eq!(
            pins,
            [
                ("cli", "glm/zcode.cjs", cli.clone()),
                ("provider-config", "config/provider/zcode-builtin.json", table.clone())
            ]
        );
        assert!(launch_plan(&install(&twin.id)).is_ok(), "{}", twin.id);
    }
}

#[test]
fn lays_out_every_desktop_os() {
    let contract = contract();
    let Some(Layout::Desktop(mac)) =
        contract.layouts.iter().find(|l| matches!(l, Layout::Desktop(d) if d.os == Os::Macos))
    else {
        panic!()
    };
    assert_eq!(mac.executable, "Contents/Frameworks/ZCode Helper.app/Contents/MacOS/ZCode Helper");
    assert_eq!(mac.cli_entry, "Contents/Resources/glm/zcode.cjs");
    let windows = contract.desktop_layout(Os::Windows).unwrap();
    assert_eq!(
        (windows.executable.as_str(), windows.host_archive.as_str()),
        ("ZCode.exe", "resources/app.asar")
    );
    assert_eq!(contract.desktop_layout(Os::Linux).unwrap().executable, "zcode");
}

#[test]
fn launches_the_agent_as_desktop_does() {
    let plan = launch_plan(&install("zcode-desktop-3.17.2")).unwrap();
    assert_eq!(
        plan.args,
        [
            "/opt/ZCode/resources/glm/zcode.cjs",
            "app-server",
            "--stdio",
            "--disallowed-tools",
            DISALLOWED_TOOLS
        ]
    );
    let env: std::collections::BTreeMap<_, _> = plan.env.iter().cloned().collect();
    assert_eq!(env["ELECTRON_RUN_AS_NODE"], "1");
    assert_eq!(
        env["ZCODE_BUILTIN_PROVIDER_CONFIG_FILE"],
        "/opt/ZCode/resources/config/provider/zcode-builtin.json"
    );
    assert_eq!(
        env["ZCODE_PERSONAL_PROVIDER_CONFIG_FILE"],
        "/home/u/.zcode/v2/provider_config.json"
    );
    assert_eq!(plan.env_remove, ["ZCODE_BASE_URL", "ZCODE_ENDPOINT_ORIGIN"]);
    assert_eq!(plan.cwd, "/home/u");
    assert!(!plan.needs_handshake && plan.stdin_preamble.is_empty());

    let mut windows = install("zcode-desktop-3.15.1");
    windows.cli_entry = r"C:\Users\u\AppData\Local\Programs\ZCode\resources\glm\zcode.cjs".into();
    windows.home = r"C:\Users\u".into();
    let env: std::collections::BTreeMap<_, _> =
        launch_plan(&windows).unwrap().env.into_iter().collect();
    assert_eq!(
        env["ZCODE_BUILTIN_PROVIDER_CONFIG_FILE"],
        r"C:\Users\u\AppData\Local\Programs\ZCode\resources\config\provider\zcode-builtin.json"
    );
    assert_eq!(
        env["ZCODE_PERSONAL_PROVIDER_CONFIG_FILE"],
        r"C:\Users\u\.zcode\v2\provider_config.json"
    );
}

#[test]
fn refuses_releases_it_does_not_know_and_runs_login() {
    assert_eq!(
        launch_plan(&install("zcode-desktop-9.9.9")).unwrap_err().message,
        "Release zcode-desktop-9.9.9 is not part of this mapper's contract"
    );
    let login = auth_plan(&install("zcode-desktop-3.16.2"), AuthCommand::Login).unwrap();
    assert_eq!(login.args, ["/opt/ZCode/resources/glm/zcode.cjs", "login", "--no-browser"]);
    let logout = auth_plan(&install("zcode-desktop-3.16.2"), AuthCommand::Logout).unwrap();
    assert_eq!(logout.args[1], "logout");
}
