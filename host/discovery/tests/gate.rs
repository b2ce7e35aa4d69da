//! The compatibility gate against fake desktop installs: every outcome the gate can reach.
//! Runtime layouts are in `runtime.rs`, release pinning and unknown versions in `releases.rs`.

mod support;

use support::*;
use zcode_contract::{Layout, LayoutKind, Platform};
use zcode_discovery::{
    ArchiveKind, ContractOutcome, GateRule, Inspector, InstallTarget, MapperContract, Pinning,
    SelectionError, select,
};
use zcode_fake_install::{
    CLI_ENTRY, HOST_INDEX, HOST_INDEX_PATH, HOST_RPC_CHUNK_PATH, Variant, WRONG_APP_VERSION,
    WRONG_CLI_VERSION, layout_paths,
};

/// The desktop layout of `os` in `contract`, to edit.
fn desktop_layout_mut(
    contract: &mut zcode_contract::Contract,
    os: zcode_contract::Os,
) -> &mut zcode_contract::DesktopLayout {
    contract
        .layouts
        .iter_mut()
        .find_map(|layout| match layout {
            Layout::Desktop(desktop) if desktop.os == os => Some(desktop),
            _ => None,
        })
        .unwrap()
}

#[test]
fn a_faithful_install_is_accepted_with_canonical_paths() {
    let fixture = Fixture::new(Variant::Good);
    let contract = contract();
    let inspection = fixture.inspect(&[("test:a", &contract)]);
    let selected = select(&inspection).unwrap();

    assert_eq!(selected.mapper_index, 0);
    assert_eq!(selected.pinning, Pinning::Pinned);
    assert!(selected.simulated);
    let install = &selected.install;
    let root = fixture.root.to_str().unwrap();
    assert_eq!(install.install_root, root);
    assert_eq!(install.kind, LayoutKind::Desktop);
    assert_eq!(install.executable, format!("{root}/zcode"));
    assert_eq!(install.cli_entry, format!("{root}/resources/glm/zcode.cjs"));
    assert_eq!(install.host_archive, format!("{root}/resources/app.asar"));
    assert_eq!(install.release_id, RELEASE_ID);
    assert_eq!(install.app_version, APP_VERSION);
    assert_eq!(install.cli_version, CLI_VERSION);
    assert_eq!(
        install.files,
        vec![
            ("host-index".to_string(), format!("{root}/resources/app.asar/{HOST_INDEX_PATH}")),
            ("host-rpc".to_string(), format!("{root}/resources/app.asar/{HOST_RPC_CHUNK_PATH}")),
            ("cli".to_string(), format!("{root}/resources/glm/zcode.cjs")),
        ]
    );
    assert!(install.unpinned.is_empty());
    assert_eq!(install.home, "", "no home directory was given");
    let findings = &inspection.verdicts[0].findings;
    assert_eq!(findings.layout, Some(LayoutKind::Desktop));
    assert_eq!(findings.files.as_ref().unwrap().host_archive_kind, ArchiveKind::Directory);
    assert_eq!(findings.app_build, None, "only macOS bundles have an app build");
}

#[test]
fn a_tampered_host_file_is_refused_by_its_hash() {
    let fixture = Fixture::new(Variant::TamperedHostHash);
    let inspection = fixture.inspect(&[("test:a", &contract())]);
    let (rule, reason) = refusal(&inspection);
    assert_eq!(rule, GateRule::HostFiles);
    assert!(reason.contains(HOST_INDEX_PATH) && reason.contains("hash does not match"), "{reason}");
    assert!(reason.contains(&format!("pinned {}", sha256(HOST_INDEX))), "names the pin: {reason}");
    assert!(matches!(select(&inspection), Err(SelectionError::NoneAccepted(_))));
}

#[test]
fn an_install_for_another_platform_is_refused_naming_both() {
    let fixture = Fixture::new(Variant::WrongPlatform);
    let inspection = fixture.inspect(&[("test:a", &contract())]);
    let (rule, reason) = refusal(&inspection);
    assert_eq!(rule, GateRule::Platform);
    let tag = Platform::current().tag();
    let other = if tag == "darwin-arm64" { "linux-x64" } else { "darwin-arm64" };
    assert!(
        reason.contains(&format!("`{other}`")) && reason.contains(&format!("`{tag}`")),
        "{reason}"
    );
    assert_eq!(inspection.verdicts[0].findings.metadata_platform.as_deref(), Some(other));
}

#[test]
fn a_wrong_app_version_is_refused() {
    let fixture = Fixture::new(Variant::WrongAppVersion);
    let inspection = fixture.inspect(&[("test:a", &contract())]);
    let (rule, reason) = refusal(&inspection);
    assert_eq!(rule, GateRule::Versions);
    assert!(reason.contains(&format!("found app {WRONG_APP_VERSION}")), "{reason}");
    assert!(reason.contains(&format!("expected app {APP_VERSION}")), "{reason}");
}

#[test]
fn a_wrong_cli_version_is_refused() {
    let fixture = Fixture::new(Variant::WrongCliVersion);
    let inspection = fixture.inspect(&[("test:a", &contract())]);
    let (rule, reason) = refusal(&inspection);
    assert_eq!(rule, GateRule::Versions);
    assert!(reason.contains(&format!("CLI {WRONG_CLI_VERSION}")), "{reason}");
    assert_eq!(inspection.verdicts[0].findings.cli_version.as_deref(), Some(WRONG_CLI_VERSION));
}

#[test]
fn a_missing_host_file_is_refused() {
    let fixture = Fixture::new(Variant::MissingFile);
    let inspection = fixture.inspect(&[("test:a", &contract())]);
    let (rule, reason) = refusal(&inspection);
    assert_eq!(rule, GateRule::HostFiles);
    assert!(reason.contains(HOST_RPC_CHUNK_PATH) && reason.contains("missing"), "{reason}");
}

#[test]
fn an_extra_metadata_key_is_refused() {
    let fixture = Fixture::new(Variant::ExtraMetadataKey);
    let inspection = fixture.inspect(&[("test:a", &contract())]);
    let (rule, reason) = refusal(&inspection);
    assert_eq!(rule, GateRule::Metadata);
    assert!(reason.contains("unexpected key `channel`"), "{reason}");
}

#[test]
fn metadata_must_hold_every_key_once_with_the_exact_values() {
    let fixture = Fixture::new(Variant::Good);
    let metadata = fixture.path(layout_paths(fixture.platform.os.unwrap()).metadata);
    let tag = fixture.platform.tag();
    let cases = [
        (
            format!(r#"{{"runtime":"electron-node","entry":"zcode.cjs","platform":"{tag}"}}"#),
            "lacks key `source`",
        ),
        (
            format!(
                r#"{{"runtime":"node","entry":"zcode.cjs","source":"apps/zcode-cli/packages/cli/dist/zcode.cjs","platform":"{tag}"}}"#
            ),
            "`runtime` is `node`, expected `electron-node`",
        ),
        (
            format!(
                r#"{{"runtime":"electron-node","runtime":"electron-node","entry":"zcode.cjs","source":"apps/zcode-cli/packages/cli/dist/zcode.cjs","platform":"{tag}"}}"#
            ),
            "key `runtime` twice",
        ),
        (r#"["not", "an object"]"#.to_string(), "not valid"),
        (r#"{"runtime": 1}"#.to_string(), "not valid"),
    ];
    for (text, expected) in cases {
        std::fs::write(&metadata, &text).unwrap();
        let (rule, reason) = refusal(&fixture.inspect(&[("test:a", &contract())]));
        assert_eq!(rule, GateRule::Metadata, "{text}");
        assert!(reason.contains(expected), "{text}: {reason}");
    }
}

#[test]
fn a_platform_independent_bundle_declares_no_platform_key() {
    // A contract with an empty platform key (a bundle any platform runs, its runtime verified
    // separately) checks no platform value, and then a platform key is just an unexpected key.
    let fixture = Fixture::new(Variant::Good);
    let mut contract = contract();
    desktop_layout_mut(&mut contract, fixture.platform.os.unwrap()).metadata_platform_key =
        String::new();
    let metadata = fixture.path(layout_paths(fixture.platform.os.unwrap()).metadata);
    let with_platform = std::fs::read_to_string(&metadata).unwrap();
    let (rule, reason) = refusal(&fixture.inspect(&[("test:a", &contract)]));
    assert_eq!(rule, GateRule::Metadata);
    assert!(reason.contains("unexpected key `platform`"), "{reason}");

    let mut entries: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&with_platform).unwrap();
    entries.remove("platform");
    std::fs::write(&metadata, serde_json::to_string(&entries).unwrap()).unwrap();
    let inspection = fixture.inspect(&[("test:a", &contract)]);
    assert!(zcode_discovery::select(&inspection).is_ok(), "{:?}", inspection.verdicts[0].outcome);
}

#[test]
fn the_metadata_entry_must_name_the_cli_entry() {
    let fixture = Fixture::new(Variant::Good);
    let mut contract = contract();
    // Both the metadata and the contract agree on `main.cjs`, but the CLI entry is zcode.cjs.
    let layout = desktop_layout_mut(&mut contract, fixture.platform.os.unwrap());
    layout.metadata_pairs.iter_mut().find(|(k, _)| k == "entry").unwrap().1 = "main.cjs".into();
    let metadata = fixture.path(layout_paths(fixture.platform.os.unwrap()).metadata);
    let text = std::fs::read_to_string(&metadata).unwrap().replace("\"zcode.cjs\"", "\"main.cjs\"");
    std::fs::write(&metadata, text).unwrap();
    let (rule, reason) = refusal(&fixture.inspect(&[("test:a", &contract)]));
    assert_eq!(rule, GateRule::MetadataEntry);
    assert!(reason.contains("`main.cjs`") && reason.contains("`zcode.cjs`"), "{reason}");
}

#[test]
fn a_modified_cli_is_refused_by_its_pin() {
    let fixture = Fixture::new(Variant::ModifiedCli);
    let inspection = fixture.inspect(&[("test:a", &contract())]);
    let (rule, reason) = refusal(&inspection);
    assert_eq!(rule, GateRule::HostFiles);
    assert!(reason.contains("`glm/zcode.cjs` (cli) hash does not match"), "{reason}");
    assert!(reason.contains(&sha256(CLI_ENTRY)), "{reason}");
}

#[test]
fn a_path_escaping_the_root_through_a_symlink_is_refused() {
    let fixture = Fixture::new(Variant::Good);
    let outside = fixture.dir.path().join("elsewhere");
    std::fs::rename(fixture.path("resources/glm"), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, fixture.path("resources/glm")).unwrap();
    let inspection = fixture.inspect(&[("test:a", &contract())]);
    let (rule, reason) = refusal(&inspection);
    assert_eq!(rule, GateRule::Paths);
    assert!(reason.contains("Resolved runtime path is outside the install root"), "{reason}");
}

#[test]
fn a_symlink_that_stays_inside_the_root_is_followed() {
    let fixture = Fixture::new(Variant::Good);
    std::fs::rename(fixture.path("resources/glm"), fixture.path("glm-real")).unwrap();
    std::os::unix::fs::symlink(fixture.path("glm-real"), fixture.path("resources/glm")).unwrap();
    let selected = select(&fixture.inspect(&[("test:a", &contract())])).unwrap();
    assert_eq!(selected.install.cli_entry, fixture.path("glm-real/zcode.cjs").to_str().unwrap());
}

#[test]
fn a_non_executable_executable_is_refused() {
    let fixture = Fixture::new(Variant::Good);
    use std::os::unix::fs::PermissionsExt;
    let exe = fixture.path("zcode");
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (rule, reason) = refusal(&fixture.inspect(&[("test:a", &contract())]));
    assert_eq!(rule, GateRule::Paths);
    assert!(reason.contains("is not executable"), "{reason}");
}

#[test]
fn two_accepting_mappers_are_an_error_naming_both() {
    let fixture = Fixture::new(Variant::Good);
    let first = contract();
    let second = contract();
    let inspection = fixture.inspect(&[("test:first", &first), ("test:second", &second)]);
    let error = select(&inspection).unwrap_err();
    assert!(matches!(error, SelectionError::Ambiguous { .. }));
    let message = error.to_string();
    assert!(message.contains("`test:first`") && message.contains("`test:second`"), "{message}");
}

#[test]
fn a_trusted_drop_in_takes_precedence_over_embedded_mappers_of_the_same_install() {
    let fixture = Fixture::new(Variant::Good);
    let (embedded, drop_in) = (contract(), contract());
    let inspection =
        fixture.inspect(&[("embedded:zcode-task-v1", &embedded), ("/m/fixed.wasm", &drop_in)]);
    let selected = select(&inspection).unwrap();
    assert_eq!(selected.source, "/m/fixed.wasm");
    assert_eq!(selected.overrides, ["embedded:zcode-task-v1"]);

    // Two embedded mappers, or two drop-ins, for one install are still an error.
    let both_embedded = fixture.inspect(&[("embedded:a", &embedded), ("embedded:b", &drop_in)]);
    assert!(matches!(select(&both_embedded), Err(SelectionError::Ambiguous { .. })));
    let two_drop_ins = fixture.inspect(&[
        ("embedded:a", &embedded),
        ("/m/x.wasm", &drop_in),
        ("/m/y.wasm", &drop_in),
    ]);
    assert!(matches!(select(&two_drop_ins), Err(SelectionError::Ambiguous { .. })));
}

#[test]
fn when_none_accepts_the_error_lists_what_was_found_and_expected() {
    let fixture = Fixture::new(Variant::WrongAppVersion);
    let mut other = contract();
    other.protocol_id = "zcode-next".into();
    other.releases = vec![release("zcode-host-9.9.9")];
    other.releases[0].app_version = "9.9.9".into();
    other.releases[0].cli_version = "1.0.0".into();
    let current = contract();
    let inspection = fixture.inspect(&[("test:current", &current), ("test:next", &other)]);
    let message = select(&inspection).unwrap_err().to_string();

    for needle in [
        // found
        &format!("app {WRONG_APP_VERSION}"),
        &format!("CLI {CLI_VERSION}"),
        &format!("platform {}", fixture.platform.tag()),
        &format!("app.asar/{HOST_INDEX_PATH} {}", sha256(HOST_INDEX)),
        // expected, per mapper
        "Mapper `test:current` (zcode-task-v1) refused",
        "Mapper `test:next` (zcode-next) refused",
        &format!("expects {RELEASE_ID}: desktop app {APP_VERSION}, CLI {CLI_VERSION}"),
        "expects zcode-host-9.9.9: desktop app 9.9.9, CLI 1.0.0",
        // ZCode 0.0.1 is older than anything known, and not a release of either mapper.
        "ZCode desktop 0.0.1 is not a release the installed mappers know (newest: 9.9.9, simulated)",
    ] {
        assert!(message.contains(needle), "missing `{needle}` in:\n{message}");
    }
}

#[test]
fn a_malformed_contract_is_refused_and_does_not_block_a_valid_one() {
    let fixture = Fixture::new(Variant::Good);
    let mut accept_anything = contract();
    accept_anything.releases[0].files[0].sha256 = Some("*".into());
    let mut no_version = contract();
    no_version.releases[0].app_version = String::new();
    let mut escaping = contract();
    for os in [zcode_contract::Os::Macos, zcode_contract::Os::Linux, zcode_contract::Os::Windows] {
        desktop_layout_mut(&mut escaping, os).cli_entry = "../../etc/passwd".into();
    }
    let mut unpinned_without_identity = contract();
    unpinned_without_identity.releases[0].files[0].sha256 = None;
    let mut twice = contract();
    let mut again = twice.releases[0].clone();
    again.id = "sim-again".into();
    twice.releases.push(again);
    let mut no_layout = desktop_contract();
    no_layout.releases.push(runtime_release("runtime-without-layout"));
    let mut stray_credentials = contract();
    stray_credentials.credential_sources.push(zcode_contract::CredentialSource {
        name: "token".into(),
        file: "../.ssh/id_ed25519".into(),
        key: "k".into(),
        lookups: Vec::new(),
        encodings: vec![zcode_contract::CredentialEncoding::Plain],
    });
    let valid = contract();
    let inspection = fixture.inspect(&[
        ("test:wildcard", &accept_anything),
        ("test:no-version", &no_version),
        ("test:escaping", &escaping),
        ("test:unpinned", &unpinned_without_identity),
        ("test:twice", &twice),
        ("test:no-layout", &no_layout),
        ("test:credentials", &stray_credentials),
        ("test:valid", &valid),
    ]);
    for (index, expected) in [
        (0, "sha256 `*`"),
        (1, "app-version ``"),
        (2, "cli-entry"),
        (3, "leaves file `host-index` unpinned but names no identity"),
        (4, "lists app 3.11.2 / CLI 0.16.5 twice"),
        (5, "is a runtime release but the contract has no runtime layout"),
        (6, "credential source `token` file"),
    ] {
        let verdict = &inspection.verdicts[index];
        let ContractOutcome::Refused(refusal) = &verdict.outcome else {
            panic!("{} was not refused", verdict.source)
        };
        assert_eq!(refusal.rule, GateRule::Contract);
        assert!(
            refusal.reason.starts_with("malformed contract") && refusal.reason.contains(expected),
            "{}",
            refusal.reason
        );
    }
    let selected = select(&inspection).unwrap();
    assert_eq!(selected.source, "test:valid");
    assert_eq!(selected.mapper_index, 7);
}

#[test]
fn required_exports_are_checked_statically() {
    let fixture = Fixture::new(Variant::Good);
    let chunk = fixture.path(&format!("resources/app.asar/{HOST_RPC_CHUNK_PATH}"));
    let contract_for = |text: &str| {
        std::fs::write(&chunk, text).unwrap();
        let mut contract = contract();
        let rpc = &mut contract.releases[0].files[1];
        rpc.sha256 = Some(sha256(text.as_bytes()));
        rpc.required_exports = vec!["g".into(), "i".into(), "j".into()];
        contract
    };

    let partial = contract_for("class P{}class C{}\nexport{P as g,C as i}; // export {X as j}\n");
    let (rule, reason) = refusal(&fixture.inspect(&[("test:a", &partial)]));
    assert_eq!(rule, GateRule::Exports);
    assert!(reason.contains("missing required export `j`"), "{reason}");

    let complete = contract_for("class P{}class C{}const S={};\nexport{P as g,C as i,S as j};\n");
    assert!(select(&fixture.inspect(&[("test:a", &complete)])).is_ok());
}

#[test]
fn an_asar_archive_file_is_read_including_unpacked_files() {
    let fixture = Fixture::new(Variant::Good);
    let archive = fixture.path("resources/app.asar");
    let index = std::fs::read(archive.join(HOST_INDEX_PATH)).unwrap();
    let chunk = std::fs::read(archive.join(HOST_RPC_CHUNK_PATH)).unwrap();
    let package = std::fs::read(archive.join("package.json")).unwrap();
    std::fs::remove_dir_all(&archive).unwrap();
    let bytes = asar_bytes(
        &[("package.json", &package), (HOST_INDEX_PATH, &index), ("out/other.js", b"x")],
        &[(HOST_RPC_CHUNK_PATH, chunk.len())],
    );
    std::fs::write(&archive, bytes).unwrap();
    let unpacked = fixture.path(&format!("resources/app.asar.unpacked/{HOST_RPC_CHUNK_PATH}"));
    std::fs::create_dir_all(unpacked.parent().unwrap()).unwrap();
    std::fs::write(&unpacked, &chunk).unwrap();

    let inspection = fixture.inspect(&[("test:a", &contract())]);
    let selected = select(&inspection).unwrap();
    let archive = archive.to_str().unwrap();
    assert_eq!(selected.install.host_archive, archive);
    assert_eq!(selected.install.app_version, APP_VERSION);
    assert_eq!(
        selected.install.files[..2],
        [
            ("host-index".to_string(), format!("{archive}/{HOST_INDEX_PATH}")),
            ("host-rpc".to_string(), format!("{archive}/{HOST_RPC_CHUNK_PATH}")),
        ]
    );
    let files = inspection.verdicts[0].findings.files.as_ref().unwrap();
    assert_eq!(files.host_archive_kind, ArchiveKind::Asar);

    // The packed bytes are what is hashed: corrupting them inside the archive is refused.
    let mut bytes = std::fs::read(archive).unwrap();
    let at = bytes.windows(index.len()).position(|w| w == index.as_slice()).unwrap();
    bytes[at] ^= 0x20;
    std::fs::write(archive, bytes).unwrap();
    let (rule, reason) = refusal(&fixture.inspect(&[("test:a", &contract())]));
    assert_eq!(rule, GateRule::HostFiles, "{reason}");
    assert!(reason.contains(HOST_INDEX_PATH), "{reason}");
}

#[test]
fn a_corrupt_asar_archive_is_refused() {
    let fixture = Fixture::new(Variant::Good);
    let archive = fixture.path("resources/app.asar");
    std::fs::remove_dir_all(&archive).unwrap();
    std::fs::write(&archive, b"\x04\0\0\0\xff\xff\xff\x7fgarbage").unwrap();
    let (rule, reason) = refusal(&fixture.inspect(&[("test:a", &contract())]));
    assert_eq!(rule, GateRule::Paths);
    assert!(reason.contains("asar header size"), "{reason}");
}

#[test]
fn macos_and_windows_layouts_are_resolved() {
    for (os, arch, tag) in [
        ("macos", "aarch64", "darwin-arm64"),
        ("windows", "x86_64", "win32-x64"),
        ("windows", "aarch64", "win32-arm64"),
    ] {
        let platform = Platform::from_rust(os, arch);
        let fixture = Fixture::for_platform(platform.clone(), Variant::Good);
        let inspection = fixture.inspect(&[("test:a", &contract())]);
        let selected = select(&inspection).unwrap_or_else(|e| panic!("{os}: {e}"));
        let paths = layout_paths(platform.os.unwrap());
        assert_eq!(selected.install.executable, fixture.path(paths.executable).to_str().unwrap());
        assert_eq!(selected.install.cli_entry, fixture.path(paths.cli_entry).to_str().unwrap());
        assert_eq!(inspection.verdicts[0].findings.metadata_platform.as_deref(), Some(tag));
        let build = inspection.verdicts[0].findings.app_build.clone();
        if os == "macos" {
            assert_eq!(build.as_deref(), Some("3.11.2.0"), "read from Contents/Info.plist");
        } else {
            assert_eq!(build, None);
        }

        // The same install seen from a process on another platform is refused.
        let linux = Platform::from_rust("linux", "x86_64");
        let inspector = Inspector { platform: &linux, ..fixture.inspector() };
        let c = contract();
        let inspection =
            inspector.inspect(&fixture.target(), &[MapperContract::from(("test:a", &c))]);
        let (rule, _) = refusal(&inspection);
        assert!(
            matches!(rule, GateRule::Layout | GateRule::Paths | GateRule::Platform),
            "{os}: {rule:?}"
        );
    }
}

#[test]
fn each_file_is_hashed_once_however_many_contracts_ask() {
    let fixture = Fixture::new(Variant::Good);
    let first = contract();
    let mut second = contract();
    second.releases[0].id = "another-id".into();
    fixture.inspect(&[("test:first", &first), ("test:second", &second)]);
    // index.js, the RPC chunk, zcode.cjs.
    assert_eq!(fixture.cache.stats().computed, 3);
    assert!(fixture.cache.stats().hits >= 3);

    fixture.inspect(&[("test:first", &first)]);
    assert_eq!(fixture.cache.stats().computed, 3, "a second run hashes nothing");

    // A file that changed (size) is hashed again.
    let index = fixture.path(&format!("resources/app.asar/{HOST_INDEX_PATH}"));
    let mut bytes = std::fs::read(&index).unwrap();
    bytes.push(b'\n');
    std::fs::write(&index, bytes).unwrap();
    fixture.inspect(&[("test:first", &first)]);
    assert_eq!(fixture.cache.stats().computed, 4);
}

#[test]
fn a_cli_version_probe_that_fails_refuses_with_its_reason() {
    let fixture = Fixture::new(Variant::Good);
    let mut contract = contract();
    contract.cli_version_probe.env.clear(); // the runner insists on ELECTRON_RUN_AS_NODE=1
    let (rule, reason) = refusal(&fixture.inspect(&[("test:a", &contract)]));
    assert_eq!(rule, GateRule::Versions);
    assert!(
        reason.contains("could not be determined") && reason.contains("probe env missing"),
        "{reason}"
    );
}

#[test]
fn a_cli_version_probe_that_hangs_is_stopped() {
    let fixture = Fixture::new(Variant::Good);
    let runner = fixture.dir.path().join("runner.sh");
    std::fs::write(&runner, "#!/bin/sh\nexec sleep 60\n").unwrap();
    let inspector =
        Inspector { probe_timeout: std::time::Duration::from_millis(300), ..fixture.inspector() };
    let c = contract();
    let target = InstallTarget::root(&fixture.root);
    let inspection = inspector.inspect(&target, &[MapperContract::from(("test:a", &c))]);
    let (rule, reason) = refusal(&inspection);
    assert_eq!(rule, GateRule::Versions);
    assert!(reason.contains("did not finish"), "{reason}");
}

#[test]
fn a_missing_runtime_file_is_refused_before_anything_is_read() {
    let fixture = Fixture::new(Variant::Good);
    std::fs::remove_file(fixture.path("resources/glm/zcode.cjs")).unwrap();
    let inspection = fixture.inspect(&[("test:a", &contract())]);
    let (rule, reason) = refusal(&inspection);
    assert_eq!(rule, GateRule::Paths);
    assert!(reason.contains("the CLI entry is missing"), "{reason}");
    assert!(inspection.verdicts[0].findings.files.is_none());
}
