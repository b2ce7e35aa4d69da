//! The trust file and the drop-in folder: an untrusted drop-in is not loaded, a trusted one
//! is (with the very bytes that were hashed), a changed one is refused; the trust file is
//! user-only, written atomically, and refused when others could have written it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use zcode_mapper_trust::{
    Admission, TRUST_FILE, TrustError, TrustState, TrustStore, scan, sha256_hex,
};

struct Setup {
    _dir: tempfile::TempDir,
    mappers: PathBuf,
    store: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let mappers = dir.path().join("mappers");
    std::fs::create_dir_all(&mappers).unwrap();
    let store = dir.path().join("config").join("zcode-acp").join(TRUST_FILE);
    Setup { mappers: mappers.canonicalize().unwrap(), store, _dir: dir }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn admissions(setup: &Setup) -> Vec<(String, Admission)> {
    let store = TrustStore::open(&setup.store).map_err(|e| e.to_string());
    scan(&setup.mappers, store.as_ref().map_err(String::as_str))
        .unwrap()
        .into_iter()
        .map(|d| (d.path.file_name().unwrap().to_string_lossy().into_owned(), d.admission))
        .collect()
}

#[test]
fn only_a_trusted_drop_in_is_admitted_with_the_bytes_that_were_hashed() {
    let setup = setup();
    let mapper = setup.mappers.join("next.wasm");
    std::fs::write(&mapper, b"component v1").unwrap();
    std::fs::write(setup.mappers.join("notes.txt"), b"not a mapper").unwrap();
    assert_eq!(admissions(&setup), [("next.wasm".to_string(), Admission::Untrusted)]);

    TrustStore::trust(&setup.store, &mapper, &sha256_hex(b"component v1")).unwrap();
    assert_eq!(
        admissions(&setup),
        [("next.wasm".to_string(), Admission::Trusted(b"component v1".to_vec()))]
    );
    let store = TrustStore::open(&setup.store).unwrap();
    let drop_ins = scan(&setup.mappers, Ok(&store)).unwrap();
    assert_eq!(drop_ins[0].trusted_bytes(), Some(&b"component v1"[..]));
    assert_eq!(drop_ins[0].sha256.as_deref(), Some(sha256_hex(b"component v1").as_str()));
}

#[test]
fn a_changed_file_is_refused_until_trusted_again() {
    let setup = setup();
    let mapper = setup.mappers.join("next.wasm");
    std::fs::write(&mapper, b"component v1").unwrap();
    TrustStore::trust(&setup.store, &mapper, &sha256_hex(b"component v1")).unwrap();
    std::fs::write(&mapper, b"component v2 (someone else's)").unwrap();
    let [(_, admission)] = admissions(&setup).try_into().unwrap();
    assert_eq!(admission, Admission::Changed { trusted_sha256: sha256_hex(b"component v1") });
    assert!(admission.to_string().contains("changed since it was trusted"));

    // The same bytes under another name are a different file: not trusted.
    std::fs::write(setup.mappers.join("copy.wasm"), b"component v1").unwrap();
    let store = TrustStore::open(&setup.store).unwrap();
    assert_eq!(
        store.state(&setup.mappers.join("copy.wasm"), &sha256_hex(b"component v1")),
        TrustState::Untrusted
    );
    TrustStore::trust(&setup.store, &mapper, &sha256_hex(b"component v2 (someone else's)"))
        .unwrap();
    assert!(matches!(admissions(&setup)[1].1, Admission::Trusted(_)));
}

#[test]
fn the_trust_file_is_user_only_and_written_atomically() {
    let setup = setup();
    let mapper = setup.mappers.join("a.wasm");
    std::fs::write(&mapper, b"a").unwrap();
    TrustStore::trust(&setup.store, &mapper, &sha256_hex(b"a")).unwrap();
    assert_eq!(mode(&setup.store), 0o600);
    assert_eq!(mode(setup.store.parent().unwrap()), 0o700);
    // Only the trust file and its lock are left behind: no temporary file.
    let mut names: Vec<String> = std::fs::read_dir(setup.store.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["trusted-mappers.json", "trusted-mappers.lock"]);
    let text = std::fs::read_to_string(&setup.store).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["version"], 1);
    assert_eq!(json["mappers"][0]["path"], mapper.to_str().unwrap());
    assert_eq!(json["mappers"][0]["sha256"], sha256_hex(b"a"));

    // Revoking removes the entry, and the mode stays.
    let (store, removed) = TrustStore::revoke(&setup.store, &mapper).unwrap();
    assert!(removed);
    assert_eq!(store.entries().count(), 0);
    assert_eq!(mode(&setup.store), 0o600);
    assert!(!TrustStore::revoke(&setup.store, &mapper).unwrap().1);
}

#[test]
fn a_trust_file_others_could_write_trusts_nothing() {
    let setup = setup();
    let mapper = setup.mappers.join("a.wasm");
    std::fs::write(&mapper, b"a").unwrap();
    TrustStore::trust(&setup.store, &mapper, &sha256_hex(b"a")).unwrap();
    std::fs::set_permissions(&setup.store, std::fs::Permissions::from_mode(0o666)).unwrap();
    let error = TrustStore::open(&setup.store).unwrap_err();
    assert!(matches!(error, TrustError::Insecure { .. }), "{error}");
    assert!(error.to_string().contains("mode 666"), "{error}");
    let [(_, admission)] = admissions(&setup).try_into().unwrap();
    assert!(
        matches!(admission, Admission::NoTrust(ref why) if why.contains("not safe")),
        "{admission:?}"
    );
    // Trusting does not paper over it either.
    assert!(TrustStore::trust(&setup.store, &mapper, &sha256_hex(b"a")).is_err());

    std::fs::set_permissions(&setup.store, std::fs::Permissions::from_mode(0o600)).unwrap();
    let folder = setup.store.parent().unwrap();
    std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o777)).unwrap();
    let error = TrustStore::open(&setup.store).unwrap_err();
    assert!(error.to_string().contains("can be written by group or others"), "{error}");
    std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert!(TrustStore::open(&setup.store).is_ok());
}

#[test]
fn a_corrupt_trust_file_trusts_nothing_and_is_not_overwritten() {
    let setup = setup();
    let mapper = setup.mappers.join("a.wasm");
    std::fs::write(&mapper, b"a").unwrap();
    TrustStore::trust(&setup.store, &mapper, &sha256_hex(b"a")).unwrap();
    for text in [
        "{not json",
        r#"{"version":2,"mappers":[]}"#,
        r#"{"version":1,"mappers":[{"path":"/x","sha256":"*"}]}"#,
    ] {
        std::fs::write(&setup.store, text).unwrap();
        let error = TrustStore::open(&setup.store).unwrap_err();
        assert!(matches!(error, TrustError::Corrupt { .. }), "{text}: {error}");
        assert!(TrustStore::trust(&setup.store, &mapper, &sha256_hex(b"a")).is_err());
        assert_eq!(
            std::fs::read_to_string(&setup.store).unwrap(),
            text,
            "left for the user to see"
        );
    }
}

#[test]
fn an_unreadable_folder_is_an_error_and_an_absent_trust_file_trusts_nothing() {
    let setup = setup();
    let store = TrustStore::open(&setup.store).unwrap();
    assert_eq!(store.entries().count(), 0);
    let error = scan(&setup.mappers.join("absent"), Ok(&store)).unwrap_err();
    assert!(error.contains("cannot read the mappers folder"), "{error}");
}
