//! Install root resolution: flag, then environment, then OS default; absolute and existing.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use zcode_contract::{Os, Platform};
use zcode_discovery::{INSTALL_ENV, RootError, RootSource, default_roots, resolve_install_root};

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + use<> {
    let map: HashMap<String, OsString> =
        pairs.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
    move |name| map.get(name).cloned()
}

fn linux() -> Platform {
    Platform::from_rust("linux", "x86_64")
}

#[test]
fn the_flag_wins_over_the_environment() {
    let flagged = tempfile::tempdir().unwrap();
    let from_env = tempfile::tempdir().unwrap();
    let env = env_of(&[(INSTALL_ENV, from_env.path().to_str().unwrap())]);

    let root = resolve_install_root(Some(flagged.path()), &linux(), &env).unwrap();
    assert_eq!(root.source, RootSource::Flag);
    assert_eq!(root.path, flagged.path().canonicalize().unwrap());

    let root = resolve_install_root(None, &linux(), &env).unwrap();
    assert_eq!(root.source, RootSource::Env);
    assert_eq!(root.configured, from_env.path());
}

#[test]
fn the_root_is_resolved_through_symlinks() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let root = resolve_install_root(Some(&link), &linux(), &env_of(&[])).unwrap();
    assert_eq!(root.configured, link);
    assert_eq!(root.path, real.canonicalize().unwrap());
}

#[test]
fn a_relative_root_is_refused_from_the_flag_or_the_environment() {
    let error = resolve_install_root(Some(Path::new("ZCode")), &linux(), &env_of(&[])).unwrap_err();
    assert!(matches!(&error, RootError::Relative { from: RootSource::Flag, .. }));
    let message = error.to_string();
    assert!(
        message.contains("must be an absolute path") && message.contains("`ZCode`"),
        "{message}"
    );

    let env = env_of(&[(INSTALL_ENV, "opt/ZCode")]);
    let error = resolve_install_root(None, &linux(), &env).unwrap_err();
    assert!(matches!(error, RootError::Relative { from: RootSource::Env, .. }));
}

#[test]
fn a_missing_root_names_the_path_and_how_to_point_at_an_install() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-install");
    let error = resolve_install_root(Some(&missing), &linux(), &env_of(&[])).unwrap_err();
    let message = error.to_string();
    assert!(message.contains(missing.to_str().unwrap()), "{message}");
    assert!(message.contains("--zcode-install") && message.contains(INSTALL_ENV), "{message}");

    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let error = resolve_install_root(Some(&file), &linux(), &env_of(&[])).unwrap_err();
    assert!(matches!(error, RootError::NotADirectory { .. }));
}

#[test]
fn an_unknown_os_is_refused_even_with_a_flag() {
    let dir = tempfile::tempdir().unwrap();
    let freebsd = Platform::from_rust("freebsd", "x86_64");
    let error = resolve_install_root(Some(dir.path()), &freebsd, &env_of(&[])).unwrap_err();
    assert_eq!(error, RootError::UnsupportedPlatform("freebsd".into()));
    assert!(error.to_string().contains("Unsupported platform: freebsd"));
}

#[test]
fn os_defaults_follow_each_platform() {
    assert_eq!(default_roots(Os::Macos, &env_of(&[])), [PathBuf::from("/Applications/ZCode.app")]);
    assert_eq!(default_roots(Os::Linux, &env_of(&[])), [PathBuf::from("/opt/ZCode")]);
    let env = env_of(&[("LOCALAPPDATA", r"C:\Users\ada\AppData\Local")]);
    assert_eq!(
        default_roots(Os::Windows, &env),
        [
            PathBuf::from(r"C:\Users\ada\AppData\Local\Programs\ZCode"),
            PathBuf::from(r"C:\Program Files\ZCode"),
        ]
    );
    assert_eq!(
        default_roots(Os::Windows, &env_of(&[])),
        [PathBuf::from(r"C:\Program Files\ZCode")]
    );
}

#[test]
fn without_flag_or_environment_the_os_default_is_used_and_named() {
    // /opt/ZCode does not exist on a test machine; if it does, it must resolve from the default.
    match resolve_install_root(None, &linux(), &env_of(&[])) {
        Ok(root) => assert_eq!(root.source, RootSource::OsDefault),
        Err(error) => {
            assert!(matches!(&error, RootError::Missing { from: RootSource::OsDefault, .. }));
            assert!(error.to_string().contains("/opt/ZCode"), "{error}");
        }
    }
}
