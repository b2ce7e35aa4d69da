//! The doctor report: fields, verdicts, releases and pinning, Nodes, drop-in trust,
//! authentication presence, and the no-install and AppImage cases.

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::*;
use zcode_contract::Platform;
use zcode_discovery::{
    Authentication, Discovery, DoctorReport, DropInReport, DropInTrust, INSTALL_ENV,
    MapperContract, RecordedRegistry, Search, SmokeResult, authentication_presence,
};
use zcode_fake_install::{Variant, write_appimage_file};

fn passed() -> SmokeResult {
    SmokeResult::passed(42, "host answered".into(), None)
}

fn discovery_with(
    fixture: &Fixture,
    flag: Option<&Path>,
    contract: &zcode_contract::Contract,
) -> Discovery {
    let registry = RecordedRegistry::default();
    let mappers = [MapperContract::from(("test:sim", contract))];
    Discovery::run(&search_for(flag, None, &registry), &fixture.inspector(), &mappers)
}

fn discovery_of(fixture: &Fixture, flag: Option<&Path>) -> Discovery {
    discovery_with(fixture, flag, &contract())
}

fn json_of(report: &DoctorReport) -> Value {
    serde_json::from_str(&report.to_json()).unwrap()
}

fn has_line(text: &str, line: &str) {
    assert!(text.lines().any(|l| l == line), "missing `{line}` in:\n{text}");
}

#[test]
fn an_accepted_install_with_a_passing_smoke_is_ok() {
    let fixture = Fixture::new(Variant::Good);
    let home = tempfile::tempdir().unwrap();
    let credentials = home.path().join(".zcode/v2/credentials.json");
    std::fs::create_dir_all(credentials.parent().unwrap()).unwrap();
    std::fs::write(&credentials, "{}").unwrap();

    let discovery = discovery_of(&fixture, Some(&fixture.root));
    let report = DoctorReport::new(&discovery, Some(home.path()), Some(passed()));
    let json = json_of(&report);

    assert_eq!(json["ok"], true);
    assert_eq!(json["platform"], Platform::current().tag());
    assert_eq!(json["layout"], "desktop");
    assert_eq!(json["install"]["resolvedRoot"], fixture.root.to_str().unwrap());
    assert_eq!(json["install"]["source"], "flag");
    assert_eq!(json["appVersion"], APP_VERSION);
    assert_eq!(json["cliVersion"], CLI_VERSION);
    assert_eq!(json["versionStanding"], "known");
    assert_eq!(json["appBuild"], Value::Null);
    assert_eq!(json["files"]["hostArchiveKind"], "directory");
    assert_eq!(json["files"]["hostFiles"].as_array().unwrap().len(), 3);
    assert_eq!(json["mappers"][0]["verdict"], "accepted");
    assert_eq!(json["mappers"][0]["acceptedRelease"], RELEASE_ID);
    assert_eq!(json["mappers"][0]["releases"][0]["appVersion"], APP_VERSION);
    assert_eq!(json["mappers"][0]["releases"][0]["pinned"], true);
    assert_eq!(json["mappers"][0]["releases"][1]["kind"], "runtime");
    assert_eq!(json["selectedMapper"]["source"], "test:sim");
    assert_eq!(json["selectedMapper"]["releaseId"], RELEASE_ID);
    assert_eq!(json["selectedMapper"]["pinning"], "pinned");
    assert_eq!(json["selectedMapper"]["simulated"], true);
    assert_eq!(json["authentication"], "present");
    assert_eq!(json["displayServerNeeded"], false);
    assert_eq!(json["smoke"]["durationMs"], 42);
    assert_eq!(json["hint"], Value::Null);
    assert_eq!(json["node"]["tried"], Value::Array(Vec::new()));

    let text = report.to_text();
    for line in [
        "ok: true",
        "layout: desktop",
        "authentication: present",
        "displayServerNeeded: false",
        &format!("mapper test:sim (zcode-task-v1): accepted {RELEASE_ID}"),
        &format!(
            "selectedMapper: test:sim (zcode-task-v1, release {RELEASE_ID}, pinned, simulated)"
        ),
        "smoke: passed in 42 ms: host answered",
    ] {
        has_line(&text, line);
    }
}

#[test]
fn the_json_field_names_are_stable() {
    let fixture = Fixture::new(Variant::Good);
    let report = DoctorReport::new(&discovery_of(&fixture, Some(&fixture.root)), None, None);
    let json = json_of(&report);
    let mut keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
    let mut expected = vec![
        "ok",
        "platform",
        "layout",
        "install",
        "node",
        "files",
        "appVersion",
        "appBuild",
        "cliVersion",
        "metadataSha256",
        "metadataPlatform",
        "versionStanding",
        "newestKnownRelease",
        "mappers",
        "dropIns",
        "selectedMapper",
        "selectionError",
        "authentication",
        "credentialsFile",
        "displayServerNeeded",
        "smoke",
        "hint",
    ];
    keys.sort_unstable();
    expected.sort_unstable();
    assert_eq!(keys, expected);
    let install: Vec<&str> =
        json["install"].as_object().unwrap().keys().map(String::as_str).collect();
    assert!(install.contains(&"appImages") && install.contains(&"osDefaults"), "{install:?}");
    let mut node: Vec<&str> =
        json["node"].as_object().unwrap().keys().map(String::as_str).collect();
    // Key order depends on serde_json's `preserve_order`, which a workspace build turns on.
    node.sort_unstable();
    assert_eq!(node, ["configured", "error", "source", "tried"]);
}

#[test]
fn the_mappers_probe_notes_are_printed_as_written_and_nothing_else_of_the_probe() {
    let fixture = Fixture::new(Variant::Good);
    let discovery = discovery_of(&fixture, Some(&fixture.root));
    let probe = json!({
        "notes": ["first thing's to know", 7, "second\nsmoke: forged"],
        "other": "not printed",
    });
    let smoke = SmokeResult::passed(42, "host answered".into(), Some(probe.clone()));
    assert_eq!(smoke.notes, ["first thing's to know", "second\nsmoke: forged"]);
    let report = DoctorReport::new(&discovery, None, Some(smoke));
    let text = report.to_text();
    has_line(&text, "note: first thing's to know");
    has_line(&text, "note: second\\nsmoke: forged");
    assert!(!text.contains("not printed") && !text.contains("\nsmoke: forged\n"), "{text}");
    let json = json_of(&report);
    assert_eq!(json["smoke"]["notes"], json!(["first thing's to know", "second\nsmoke: forged"]));
    assert_eq!(json["smoke"]["probe"], probe);

    let quiet = DoctorReport::new(&discovery, None, Some(passed()));
    assert!(!quiet.to_text().contains("note:"));
    assert_eq!(json_of(&quiet)["smoke"]["notes"], json!([]));
}

#[test]
fn accepted_without_a_smoke_start_is_not_ok() {
    let fixture = Fixture::new(Variant::Good);
    let discovery = discovery_of(&fixture, Some(&fixture.root));
    let report = DoctorReport::new(&discovery, None, None);
    assert!(!report.ok);
    assert_eq!(report.authentication, Authentication::Unknown, "no home directory known");
    assert!(report.to_text().lines().any(|l| l == "smoke: not run"));

    let failed = SmokeResult::failed(7, "exit 1".into());
    let report = DoctorReport::new(&discovery, None, Some(failed));
    assert!(!report.ok);
    assert!(report.hint.unwrap().contains("did not start"));
}

#[test]
fn a_refused_install_reports_each_mapper_reason_and_releases() {
    let fixture = Fixture::new(Variant::TamperedHostHash);
    let discovery = discovery_of(&fixture, Some(&fixture.root));
    let report = DoctorReport::new(&discovery, None, Some(passed()));
    assert!(!report.ok, "a passing smoke does not make a refused install ok");
    let json = json_of(&report);
    assert_eq!(json["mappers"][0]["verdict"], "refused");
    assert_eq!(json["mappers"][0]["refusedBy"], "host-files");
    assert!(json["mappers"][0]["reason"].as_str().unwrap().contains("hash does not match"));
    assert_eq!(json["selectedMapper"], Value::Null);
    assert!(json["selectionError"].as_str().unwrap().contains("No mapper accepts"));
    // What was found is still shown.
    assert_eq!(json["appVersion"], APP_VERSION);
    assert!(json["files"]["hostFiles"][0]["sha256"].is_string());
}

#[test]
fn an_unpinned_release_is_reported_as_unpinned_with_its_identity() {
    let fixture = Fixture::new(Variant::Good);
    let mut contract = contract();
    contract.releases = vec![unpinned(release("zcode-host-3.11.2"), "zcode-host 3.11.2")];
    let discovery = discovery_with(&fixture, Some(&fixture.root), &contract);
    let report = DoctorReport::new(&discovery, None, Some(passed()));
    let json = json_of(&report);
    assert_eq!(json["selectedMapper"]["pinning"], "unpinned");
    assert_eq!(
        json["selectedMapper"]["unpinnedRoles"],
        serde_json::json!(["host-index", "host-rpc", "cli"])
    );
    assert_eq!(json["selectedMapper"]["identity"], "zcode-host 3.11.2");
    assert_eq!(json["mappers"][0]["releases"][0]["pinned"], false);
    assert_eq!(json["mappers"][0]["releases"][0]["files"][0]["sha256"], Value::Null);
    let text = report.to_text();
    has_line(
        &text,
        "selectedMapper: test:sim (zcode-task-v1, release zcode-host-3.11.2, unpinned: host-index, host-rpc, cli)",
    );
    assert!(text.contains("unpinned (identity zcode-host 3.11.2)"), "{text}");
}

#[test]
fn a_newer_version_is_reported_with_the_newest_known_release() {
    let fixture = Fixture::new(Variant::NewerVersion);
    let mut contract = contract();
    contract.releases.push(unpinned(release("zcode-host-3.18.2"), "x"));
    contract.releases[2].app_version = "3.18.2".into();
    let discovery = discovery_with(&fixture, Some(&fixture.root), &contract);
    let report = DoctorReport::new(&discovery, None, None);
    let json = json_of(&report);
    assert_eq!(json["versionStanding"], "newer");
    assert_eq!(json["newestKnownRelease"], "3.18.2");
    assert_eq!(json["mappers"][0]["refusedBy"], "versions");
    assert!(
        json["selectionError"]
            .as_str()
            .unwrap()
            .contains("newer than any release the installed mappers know (newest: 3.18.2)")
    );
}

#[test]
fn a_runtime_reports_the_nodes_it_tried() {
    let fixture = Fixture::runtime(Variant::NodeTooOld);
    let discovery = discovery_of(&fixture, Some(&fixture.root));
    let report = DoctorReport::new(&discovery, None, None);
    let json = json_of(&report);
    assert_eq!(json["layout"], "runtime");
    assert_eq!(json["mappers"][0]["refusedBy"], "node");
    let tried = &json["node"]["tried"][0];
    assert_eq!(tried["source"], "install");
    assert_eq!(tried["version"], "22.12.0");
    assert_eq!(tried["accepted"], false);
    assert!(tried["problem"].as_str().unwrap().starts_with("Node 22 found, 24 needed"));
    let text = report.to_text();
    let line = text.lines().find(|l| l.starts_with("tried ")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("(install): v22.12.0, refused: Node 22 found, 24 needed"), "{line}");
}

#[test]
fn drop_ins_are_listed_with_their_trust_and_the_command_that_trusts_them() {
    let fixture = Fixture::new(Variant::NewerVersion);
    let discovery = discovery_of(&fixture, Some(&fixture.root));
    let drop_ins = vec![
        DropInReport {
            path: "/m/next.wasm".into(),
            sha256: Some("ab".repeat(32)),
            trust: DropInTrust::Untrusted,
            loaded: false,
            error: None,
            trust_command: Some("zcode-acp mapper trust /m/next.wasm".into()),
        },
        DropInReport {
            path: "/m/old.wasm".into(),
            sha256: Some("cd".repeat(32)),
            trust: DropInTrust::Changed,
            loaded: false,
            error: Some("changed since it was trusted".into()),
            trust_command: Some("zcode-acp mapper trust /m/old.wasm".into()),
        },
        DropInReport {
            path: "/m/ok.wasm".into(),
            sha256: Some("ef".repeat(32)),
            trust: DropInTrust::Trusted,
            loaded: true,
            error: None,
            trust_command: None,
        },
    ];
    let report = DoctorReport::new(&discovery, None, None).with_drop_ins(drop_ins);
    let json = json_of(&report);
    assert_eq!(json["dropIns"][0]["trust"], "untrusted");
    assert_eq!(json["dropIns"][1]["trust"], "changed");
    assert_eq!(json["dropIns"][2]["loaded"], true);
    let hint = report.hint.clone().unwrap();
    assert!(hint.contains("2 drop-in mapper(s) are not loaded until trusted"), "{hint}");
    assert!(hint.contains("`zcode-acp mapper trust /m/next.wasm`"), "{hint}");
    let text = report.to_text();
    has_line(
        &text,
        "dropIn /m/next.wasm: untrusted, not loaded; trust it with `zcode-acp mapper trust /m/next.wasm`",
    );
    has_line(
        &text,
        "dropIn /m/old.wasm: changed, not loaded (changed since it was trusted); trust it with `zcode-acp mapper trust /m/old.wasm`",
    );
    has_line(&text, "dropIn /m/ok.wasm: trusted, loaded");
}

#[test]
fn without_an_install_the_report_explains_how_to_point_at_one() {
    let fixture = Fixture::new(Variant::Good);
    let missing = fixture.dir.path().join("nowhere");
    let discovery = discovery_of(&fixture, Some(&missing));
    let report = DoctorReport::new(&discovery, None, None);
    assert!(!report.ok);
    assert_eq!(report.install.configured_root.as_deref(), missing.to_str());
    assert!(report.install.error.as_ref().unwrap().contains("does not exist"));
    assert!(report.files.is_none());
    let hint = report.hint.clone().unwrap();
    assert!(hint.contains("--zcode-install") && hint.contains(INSTALL_ENV), "{hint}");
    assert!(hint.contains("the places tried are"), "{hint}");
    let json = json_of(&report);
    assert_eq!(json["mappers"][0]["verdict"], "not-inspected");
    assert_eq!(json["mappers"][0]["releases"][0]["id"], RELEASE_ID);
    let text = report.to_text();
    assert!(text.contains("not inspected (no install root)"), "{text}");
}

#[test]
fn an_appimage_gets_the_extraction_hint() {
    let fixture = Fixture::new(Variant::Good);
    let appimage = fixture.dir.path().join("ZCode-3.14.4-linux-x64.AppImage");
    write_appimage_file(&appimage).unwrap();
    let discovery = discovery_of(&fixture, Some(&appimage));
    let report = DoctorReport::new(&discovery, None, None);
    let hint = report.hint.unwrap();
    assert!(hint.contains("--appimage-extract") && hint.contains("squashfs-root"), "{hint}");
    assert!(report.install.error.unwrap().contains("is a ZCode AppImage"));

    // Nothing installed, but an AppImage in ~/Applications: listed, with the same hint.
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("Applications")).unwrap();
    let found = home.path().join("Applications/ZCode-3.14.4-linux-x64.AppImage");
    write_appimage_file(&found).unwrap();
    let registry = RecordedRegistry::default();
    let data = home.path().join("data");
    let env = |name: &str| (name == "XDG_DATA_HOME").then(|| data.clone().into_os_string());
    let search = Search {
        install_flag: None,
        node_flag: None,
        env: &env,
        home: Some(home.path()),
        registry: &registry,
    };
    let linux = Platform::from_rust("linux", "x86_64");
    let inspector = zcode_discovery::Inspector { platform: &linux, ..fixture.inspector() };
    let c = contract();
    let discovery = Discovery::run(&search, &inspector, &[MapperContract::from(("test:sim", &c))]);
    if discovery.root.is_ok() {
        return; // this machine has /opt/ZCode
    }
    let report = DoctorReport::new(&discovery, Some(home.path()), None);
    assert_eq!(report.install.app_images, [found.display().to_string()]);
    assert!(report.to_text().contains("appImage: "));
    assert!(report.hint.unwrap().contains("--appimage-extract"));
}

#[test]
fn authentication_presence_never_needs_the_contents() {
    let home = tempfile::tempdir().unwrap();
    let file = ".zcode/v2/credentials.json";
    assert_eq!(authentication_presence(Some(home.path()), file), Authentication::Missing);
    let path = home.path().join(file);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "").unwrap();
    assert_eq!(authentication_presence(Some(home.path()), file), Authentication::Missing, "empty");
    std::fs::write(&path, "secret").unwrap();
    // Unreadable contents do not matter: only presence is checked.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    assert_eq!(authentication_presence(Some(home.path()), file), Authentication::Present);
    assert_eq!(authentication_presence(Some(Path::new("relative")), file), Authentication::Unknown);
    assert_eq!(authentication_presence(None, file), Authentication::Unknown);
}
