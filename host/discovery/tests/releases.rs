//! Releases: pinned, unpinned (accepted only as such, with the identity the host must report),
//! a pinned hash that does not match, and versions no release names (refused, naming the
//! newest release the mappers know). Nothing is guessed.

mod support;

use support::*;
use zcode_contract::{Contract, LayoutKind};
use zcode_discovery::{
    GateRule, Pinning, SelectionError, VersionStanding, select, version_standing,
};
use zcode_fake_install::{NEWER_APP_VERSION, Variant};

const IDENTITY: &str = "zcode-host 3.11.2";

/// The real 3.11.2 release, known by versions and identity only.
fn real_unpinned() -> zcode_contract::Release {
    let mut release = unpinned(release("zcode-host-3.11.2"), IDENTITY);
    release.id = "zcode-host-3.11.2".into();
    release
}

fn with_releases(releases: Vec<zcode_contract::Release>) -> Contract {
    let mut contract = contract();
    contract.releases = releases;
    contract
}

#[test]
fn a_release_without_pins_is_accepted_only_as_unpinned() {
    let fixture = Fixture::new(Variant::Good);
    let contract = with_releases(vec![real_unpinned()]);
    let selected = select(&fixture.inspect(&[("test:a", &contract)])).unwrap();
    assert_eq!(selected.pinning, Pinning::Unpinned);
    assert_eq!(selected.install.release_id, "zcode-host-3.11.2");
    assert_eq!(selected.install.unpinned, ["host-index", "host-rpc", "cli"]);
    assert_eq!(selected.identity.as_deref(), Some(IDENTITY), "the core checks it at setup");
    assert!(!selected.simulated);

    // Unpinned files must still exist.
    let missing = Fixture::new(Variant::MissingFile);
    let (rule, reason) = refusal(&missing.inspect(&[("test:a", &contract)]));
    assert_eq!(rule, GateRule::HostFiles);
    assert!(reason.contains("missing"), "{reason}");
}

#[test]
fn a_partly_pinned_release_is_refused_when_a_pin_does_not_match() {
    let mut partly = real_unpinned();
    partly.files[0].sha256 = Some(sha256(zcode_fake_install::HOST_INDEX));
    let contract = with_releases(vec![partly]);
    let good = Fixture::new(Variant::Good);
    let selected = select(&good.inspect(&[("test:a", &contract)])).unwrap();
    assert_eq!(selected.install.unpinned, ["host-rpc", "cli"]);
    let tampered = Fixture::new(Variant::TamperedHostHash);
    let (rule, reason) = refusal(&tampered.inspect(&[("test:a", &contract)]));
    assert_eq!(rule, GateRule::HostFiles);
    assert!(reason.contains("hash does not match"), "{reason}");
}

#[test]
fn a_pinned_release_wins_over_an_unpinned_one_of_the_same_version() {
    // The simulator's pinned 3.11.2 and the real 3.11.2 known by identity: the simulator's
    // files match both, the pinned release is the stronger evidence.
    let contract = with_releases(vec![real_unpinned(), release(RELEASE_ID)]);
    let simulated = Fixture::new(Variant::Good);
    let selected = select(&simulated.inspect(&[("test:a", &contract)])).unwrap();
    assert_eq!(selected.install.release_id, RELEASE_ID);
    assert_eq!(selected.pinning, Pinning::Pinned);

    // Where the pins do not match, the unpinned release is what accepts (and says so).
    let other = Fixture::new(Variant::TamperedHostHash);
    let selected = select(&other.inspect(&[("test:a", &contract)])).unwrap();
    assert_eq!(selected.install.release_id, "zcode-host-3.11.2");
    assert_eq!(selected.pinning, Pinning::Unpinned);

    // Two unpinned acceptances are ambiguous.
    let mut second = with_releases(vec![real_unpinned()]);
    second.protocol_id = "zcode-other".into();
    let first = with_releases(vec![real_unpinned()]);
    let error = select(&other.inspect(&[("test:a", &first), ("test:b", &second)])).unwrap_err();
    assert!(matches!(error, SelectionError::Ambiguous { .. }), "{error}");
}

#[test]
fn the_version_standing_is_read_past_a_mapper_of_another_layout_kind() {
    // A runtime-only contract listed first finds no runtime folder (and so no version) in a
    // desktop install: the standing comes from the mapper that read the desktop's version.
    let fixture = Fixture::new(Variant::NewerVersion);
    let mut runtime_only = contract();
    runtime_only.layouts.retain(|l| l.kind() == LayoutKind::Runtime);
    runtime_only.releases.retain(|r| r.kind == LayoutKind::Runtime);
    let desktop = desktop_contract();
    let inspection =
        fixture.inspect(&[("test:runtime", &runtime_only), ("test:desktop", &desktop)]);
    assert!(matches!(
        version_standing(&inspection),
        Some((LayoutKind::Desktop, VersionStanding::Newer { .. }))
    ));
}

#[test]
fn a_newer_version_than_any_known_is_refused_naming_the_newest() {
    let fixture = Fixture::new(Variant::NewerVersion);
    let mut known = real_unpinned();
    known.app_version = "3.18.2".into();
    known.id = "zcode-3.18.2".into();
    let contract = with_releases(vec![release(RELEASE_ID), known]);
    let inspection = fixture.inspect(&[("test:a", &contract)]);
    assert_eq!(
        version_standing(&inspection),
        Some((
            LayoutKind::Desktop,
            VersionStanding::Newer { found: NEWER_APP_VERSION.into(), newest: "3.18.2".into() }
        ))
    );
    let message = select(&inspection).unwrap_err().to_string();
    assert!(
        message.contains(
            "ZCode desktop 3.19.0 is newer than any release the installed mappers know \
             (newest: 3.18.2)"
        ),
        "{message}"
    );
    assert!(message.contains("Nothing is guessed"), "{message}");
    let (rule, _) = refusal(&inspection);
    assert_eq!(rule, GateRule::Versions);
}

#[test]
fn a_version_between_known_releases_is_refused_too() {
    // 3.19.0 when the mappers know 3.11.2 and 4.0.0: not newer, still unknown, still refused.
    let fixture = Fixture::new(Variant::NewerVersion);
    let mut four = real_unpinned();
    four.app_version = "4.0.0".into();
    four.id = "zcode-4.0.0".into();
    let mut runtime_five = runtime_release("runtime-5.0.0");
    runtime_five.app_version = "5.0.0".into();
    let contract = with_releases(vec![release(RELEASE_ID), four, runtime_five]);
    let inspection = fixture.inspect(&[("test:a", &contract)]);
    let message = select(&inspection).unwrap_err().to_string();
    assert!(
        message.contains(
            "ZCode desktop 3.19.0 is not a release the installed mappers know (newest: 4.0.0)"
        ),
        "the newest desktop release, not the runtime one: {message}"
    );
}

#[test]
fn a_version_known_only_from_the_simulator_says_so() {
    let fixture = Fixture::new(Variant::NewerVersion);
    let inspection = fixture.inspect(&[("test:a", &desktop_contract())]);
    let message = select(&inspection).unwrap_err().to_string();
    assert!(message.contains("(newest: 3.11.2, simulated)"), "{message}");
}

#[test]
fn a_known_version_with_other_files_is_a_hash_refusal_not_an_unknown_version() {
    let fixture = Fixture::new(Variant::TamperedHostHash);
    let inspection = fixture.inspect(&[("test:a", &contract())]);
    assert!(matches!(version_standing(&inspection), Some((_, VersionStanding::Known { .. }))));
    let message = select(&inspection).unwrap_err().to_string();
    assert!(!message.contains("not a release"), "{message}");
    assert!(message.contains("hash does not match"), "{message}");
}
