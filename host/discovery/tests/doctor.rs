//! The doctor report: fields, verdicts, authentication presence, and the no-install case.

mod support;

use std::ffi::OsString;
use std::path::Path;

use serde_json::Value;
use support::*;
use zcode_contract::Platform;
use zcode_discovery::{
    Authentication, Discovery, DoctorReport, INSTALL_ENV, MapperContract, SmokeResult,
    authentication_presence,
};
use zcode_fake_install::Variant;

fn no_env(_: &str) -> Option<OsString> {
    None
}

fn passed() -> SmokeResult {
    SmokeResult { passed: true, duration_ms: 42, detail: "host answered".into() }
}

fn discovery_of(fixture: &Fixture, flag: Option<&Path>) -> Discovery {
    let contract = contract();
    let mappers = [MapperContract::from(("test:sim", &contract))];
    Discovery::run(flag, &no_env, &fixture.inspector(), &mappers)
}

#[test]
fn an_accepted_install_with_a_passing_smoke_is_ok() {
    let fixture = Fixture::new(Variant::ModifiedCli);
    let home = tempfile::tempdir().unwrap();
    let credentials = home.path().join(".zcode/v2/credentials.json");
    std::fs::create_dir_all(credentials.parent().unwrap()).unwrap();
    std::fs::write(&credentials, "{}").unwrap();

    let discovery = discovery_of(&fixture, Some(&fixture.root));
    let report = DoctorReport::new(&discovery, Some(home.path()), Some(passed()));
    let json: Value = serde_json::from_str(&report.to_json()).unwrap();

    assert_eq!(json["ok"], true);
    assert_eq!(json["platform"], Platform::current().tag());
    assert_eq!(json["install"]["resolvedRoot"], fixture.root.to_str().unwrap());
    assert_eq!(json["install"]["source"], "flag");
    assert_eq!(json["appVersion"], APP_VERSION);
    assert_eq!(json["cliVersion"], CLI_VERSION);
    assert_eq!(json["cliIntegrity"], "modified");
    assert_eq!(json["expectedCliSha256"], sha256(zcode_fake_install::CLI_ENTRY));
    assert_ne!(json["cliSha256"], json["expectedCliSha256"]);
    assert_eq!(json["appBuild"], Value::Null);
    assert_eq!(json["files"]["hostArchiveKind"], "directory");
    assert_eq!(json["files"]["hostFiles"].as_array().unwrap().len(), 2);
    assert_eq!(json["mappers"][0]["verdict"], "accepted");
    assert_eq!(json["mappers"][0]["acceptedArtifact"], ARTIFACT_ID);
    assert_eq!(json["mappers"][0]["expects"][0]["appVersion"], APP_VERSION);
    assert_eq!(json["selectedMapper"]["source"], "test:sim");
    assert_eq!(json["selectedMapper"]["simulated"], true);
    assert_eq!(json["authentication"], "present");
    assert_eq!(json["displayServerNeeded"], false);
    assert_eq!(json["smoke"]["durationMs"], 42);
    assert_eq!(json["hint"], Value::Null);

    let text = report.to_text();
    for line in [
        "ok: true",
        "cliIntegrity: modified",
        "authentication: present",
        "displayServerNeeded: false",
        &format!("mapper test:sim (zcode-task-v1): accepted {ARTIFACT_ID}"),
        "smoke: passed in 42 ms: host answered",
    ] {
        assert!(text.lines().any(|l| l == line), "missing `{line}` in:\n{text}");
    }
}

#[test]
fn the_json_field_names_are_stable() {
    let fixture = Fixture::new(Variant::Good);
    let report = DoctorReport::new(&discovery_of(&fixture, Some(&fixture.root)), None, None);
    let json: Value = serde_json::from_str(&report.to_json()).unwrap();
    let keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
    let mut expected = vec![
        "ok",
        "platform",
        "install",
        "files",
        "appVersion",
        "appBuild",
        "cliVersion",
        "cliSha256",
        "expectedCliSha256",
        "cliIntegrity",
        "metadataSha256",
        "metadataPlatform",
        "mappers",
        "unloadedMappers",
        "selectedMapper",
        "selectionError",
        "authentication",
        "credentialsFile",
        "displayServerNeeded",
        "smoke",
        "hint",
    ];
    let mut keys = keys;
    keys.sort_unstable();
    expected.sort_unstable();
    assert_eq!(keys, expected);
}

#[test]
fn accepted_without_a_smoke_start_is_not_ok() {
    let fixture = Fixture::new(Variant::Good);
    let discovery = discovery_of(&fixture, Some(&fixture.root));
    let report = DoctorReport::new(&discovery, None, None);
    assert!(!report.ok);
    assert_eq!(report.authentication, Authentication::Unknown, "no home directory known");
    assert!(report.to_text().lines().any(|l| l == "smoke: not run"));

    let failed = SmokeResult { passed: false, duration_ms: 7, detail: "exit 1".into() };
    let report = DoctorReport::new(&discovery, None, Some(failed));
    assert!(!report.ok);
    assert!(report.hint.unwrap().contains("did not start"));
}

#[test]
fn a_refused_install_reports_each_mapper_reason_and_expectations() {
    let fixture = Fixture::new(Variant::TamperedHostHash);
    let discovery = discovery_of(&fixture, Some(&fixture.root));
    let report = DoctorReport::new(&discovery, None, Some(passed()));
    assert!(!report.ok, "a passing smoke does not make a refused install ok");
    let json: Value = serde_json::from_str(&report.to_json()).unwrap();
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
    assert!(hint.contains("the OS default is"), "{hint}");
    let json: Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["mappers"][0]["verdict"], "not-inspected");
    assert_eq!(json["mappers"][0]["expects"][0]["id"], ARTIFACT_ID);
    let text = report.to_text();
    assert!(text.contains("not inspected (no install root)"), "{text}");
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
