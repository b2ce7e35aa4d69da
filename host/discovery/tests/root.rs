//! Install root resolution: flag, then environment, then the places ZCode installs itself
//! (macOS app folders, `/opt/ZCode`, Windows folders and uninstall entries, the Paseo managed
//! runtimes folder); absolute and existing; an AppImage is never run.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use zcode_contract::{Os, Platform};
use zcode_discovery::{
    INSTALL_ENV, RecordedRegistry, RootError, RootSource, Search, UninstallRegistry,
    default_candidates, resolve_install_root,
};
use zcode_fake_install::{
    FakeInstall, FakeLayout, PASEO_RUNTIMES, Runner, WindowsScope, write_appimage_file,
};

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + use<> {
    let map: HashMap<String, OsString> =
        pairs.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
    move |name| map.get(name).cloned()
}

fn linux() -> Platform {
    Platform::from_rust("linux", "x86_64")
}

fn search<'a>(
    flag: Option<&'a Path>,
    env: &'a dyn Fn(&str) -> Option<OsString>,
    home: Option<&'a Path>,
    registry: &'a dyn UninstallRegistry,
) -> Search<'a> {
    Search { install_flag: flag, node_flag: None, env, home, registry }
}

fn runner() -> Runner {
    Runner { program: "/bin/true".into(), args: Vec::new() }
}

#[test]
fn the_flag_wins_over_the_environment() {
    let flagged = tempfile::tempdir().unwrap();
    let from_env = tempfile::tempdir().unwrap();
    let env = env_of(&[(INSTALL_ENV, from_env.path().to_str().unwrap())]);
    let registry = RecordedRegistry::default();

    let root = resolve_install_root(&search(Some(flagged.path()), &env, None, &registry), &linux())
        .unwrap();
    assert_eq!(root.source, RootSource::Flag);
    assert_eq!(root.path, flagged.path().canonicalize().unwrap());

    let root = resolve_install_root(&search(None, &env, None, &registry), &linux()).unwrap();
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
    let env = env_of(&[]);
    let registry = RecordedRegistry::default();
    let root = resolve_install_root(&search(Some(&link), &env, None, &registry), &linux()).unwrap();
    assert_eq!(root.configured, link);
    assert_eq!(root.path, real.canonicalize().unwrap());
}

#[test]
fn a_relative_root_is_refused_from_the_flag_or_the_environment() {
    let registry = RecordedRegistry::default();
    let env = env_of(&[]);
    let error =
        resolve_install_root(&search(Some(Path::new("ZCode")), &env, None, &registry), &linux())
            .unwrap_err();
    assert!(matches!(&error, RootError::Relative { from: RootSource::Flag, .. }));
    let message = error.to_string();
    assert!(
        message.contains("must be an absolute path") && message.contains("`ZCode`"),
        "{message}"
    );

    let env = env_of(&[(INSTALL_ENV, "opt/ZCode")]);
    let error = resolve_install_root(&search(None, &env, None, &registry), &linux()).unwrap_err();
    assert!(matches!(error, RootError::Relative { from: RootSource::Env, .. }));
}

#[test]
fn a_missing_root_names_the_path_and_how_to_point_at_an_install() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-install");
    let env = env_of(&[]);
    let registry = RecordedRegistry::default();
    let error =
        resolve_install_root(&search(Some(&missing), &env, None, &registry), &linux()).unwrap_err();
    let message = error.to_string();
    assert!(message.contains(missing.to_str().unwrap()), "{message}");
    assert!(message.contains("--zcode-install") && message.contains(INSTALL_ENV), "{message}");
    assert!(message.contains("--zcode-node"), "runtimes are named too: {message}");

    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let error =
        resolve_install_root(&search(Some(&file), &env, None, &registry), &linux()).unwrap_err();
    assert!(matches!(error, RootError::NotADirectory { .. }));
}

#[test]
fn an_appimage_is_refused_with_how_to_extract_it_and_never_run() {
    let dir = tempfile::tempdir().unwrap();
    let appimage = dir.path().join("ZCode-3.14.4-linux-x64.AppImage");
    write_appimage_file(&appimage).unwrap();
    // Were it run, this would leave a mark: the file is never executed.
    let env = env_of(&[]);
    let registry = RecordedRegistry::default();
    let error = resolve_install_root(&search(Some(&appimage), &env, None, &registry), &linux())
        .unwrap_err();
    assert!(matches!(error, RootError::AppImage { from: RootSource::Flag, .. }), "{error:?}");
    let message = error.to_string();
    let folder = dir.path().display();
    assert!(message.contains("does not run an AppImage"), "{message}");
    assert!(message.contains(&format!("{} --appimage-extract", appimage.display())), "{message}");
    assert!(message.contains(&format!("--zcode-install {folder}/squashfs-root")), "{message}");

    // Renamed, it is still recognised by its magic.
    let renamed = dir.path().join("zcode");
    std::fs::rename(&appimage, &renamed).unwrap();
    let error =
        resolve_install_root(&search(Some(&renamed), &env, None, &registry), &linux()).unwrap_err();
    assert!(matches!(error, RootError::AppImage { .. }), "{error:?}");
}

#[test]
fn with_nothing_installed_an_appimage_in_the_usual_places_gets_the_extraction_hint() {
    let home = tempfile::tempdir().unwrap();
    let apps = home.path().join("Applications");
    std::fs::create_dir_all(&apps).unwrap();
    let appimage = apps.join("ZCode-3.14.4-linux-x64.AppImage");
    write_appimage_file(&appimage).unwrap();
    // An empty data home: no managed runtimes either.
    let data = home.path().join("data");
    let env = env_of(&[("XDG_DATA_HOME", data.to_str().unwrap())]);
    let registry = RecordedRegistry::default();
    match resolve_install_root(&search(None, &env, Some(home.path()), &registry), &linux()) {
        // /opt/ZCode exists on this machine: then it is the root, and no hint is needed.
        Ok(root) => assert_eq!(root.path, Path::new("/opt/ZCode").canonicalize().unwrap()),
        Err(error) => {
            assert_eq!(error.appimages(), std::slice::from_ref(&appimage));
            let message = error.to_string();
            assert!(message.contains("/opt/ZCode"), "{message}");
            assert!(message.contains(&format!("Found a ZCode AppImage at {}", appimage.display())));
            assert!(message.contains("--appimage-extract"), "{message}");
        }
    }
}

#[test]
fn an_extracted_appimage_is_a_root_like_any_other() {
    let dir = tempfile::tempdir().unwrap();
    let root = FakeInstall::builder(dir.path().join("squashfs-root"))
        .layout(FakeLayout::AppImage)
        .runner(runner())
        .build()
        .unwrap();
    let env = env_of(&[]);
    let registry = RecordedRegistry::default();
    let resolved =
        resolve_install_root(&search(Some(&root), &env, None, &registry), &linux()).unwrap();
    assert_eq!(resolved.path, root);
}

#[test]
fn an_unknown_os_is_refused_even_with_a_flag() {
    let dir = tempfile::tempdir().unwrap();
    let freebsd = Platform::from_rust("freebsd", "x86_64");
    let env = env_of(&[]);
    let registry = RecordedRegistry::default();
    let error = resolve_install_root(&search(Some(dir.path()), &env, None, &registry), &freebsd)
        .unwrap_err();
    assert_eq!(error, RootError::UnsupportedPlatform("freebsd".into()));
    assert!(error.to_string().contains("Unsupported platform: freebsd"));
}

#[test]
fn the_places_tried_follow_each_platform() {
    let registry = RecordedRegistry::default();
    let paths = |os, env: &dyn Fn(&str) -> Option<OsString>, home| -> Vec<PathBuf> {
        default_candidates(os, &search(None, env, home, &registry))
            .into_iter()
            .map(|c| c.path)
            .collect()
    };
    let home = Path::new("/home/ada");
    assert_eq!(
        paths(Os::Macos, &env_of(&[]), Some(home)),
        [
            PathBuf::from("/Applications/ZCode.app"),
            PathBuf::from("/home/ada/Applications/ZCode.app"),
            PathBuf::from("/home/ada/.local/share/paseo-plugin-zcode-provider/runtimes"),
        ]
    );
    assert_eq!(paths(Os::Linux, &env_of(&[]), None), [PathBuf::from("/opt/ZCode")]);
    let env = env_of(&[
        ("LOCALAPPDATA", r"C:\Users\ada\AppData\Local"),
        ("ProgramFiles", r"D:\Program Files"),
    ]);
    assert_eq!(
        paths(Os::Windows, &env, None),
        [
            PathBuf::from(r"C:\Users\ada\AppData\Local\Programs\ZCode"),
            PathBuf::from(r"D:\Program Files\ZCode"),
            PathBuf::from(r"C:\Program Files\ZCode"),
        ],
        "a relative-looking LOCALAPPDATA is no managed-runtimes base on this host"
    );
    assert_eq!(paths(Os::Windows, &env_of(&[]), None), [PathBuf::from(r"C:\Program Files\ZCode")]);
}

#[test]
fn a_windows_install_is_found_through_its_uninstall_entry() {
    for (arch, scope) in [("x86_64", WindowsScope::PerUser), ("aarch64", WindowsScope::Machine)] {
        let windows = Platform::from_rust("windows", arch);
        let dir = tempfile::tempdir().unwrap();
        // Installed somewhere no default names, as on another drive.
        let built = FakeInstall::builder(dir.path().join("Apps").join("ZCode"))
            .os(Os::Windows)
            .platform_tag(windows.tag())
            .app_version("3.14.5")
            .windows_scope(scope)
            .runner(runner())
            .build_install()
            .unwrap();
        let entry = built.uninstall_entry.unwrap().to_string();
        let registry = RecordedRegistry::from_json(&entry).unwrap();
        let env = env_of(&[]);
        let found = search(None, &env, None, &registry);
        let candidates = default_candidates(Os::Windows, &found);
        assert_eq!(candidates.last().unwrap().source, RootSource::WindowsRegistry);
        let root = resolve_install_root(&found, &windows).unwrap();
        assert_eq!(root.source, RootSource::WindowsRegistry, "{arch}");
        assert_eq!(root.path, built.root, "{arch}");
    }
}

#[test]
fn a_managed_runtimes_folder_is_found_with_its_node() {
    let data = tempfile::tempdir().unwrap();
    let built = FakeInstall::builder(data.path().join(PASEO_RUNTIMES))
        .os(Os::Linux)
        .platform_tag(linux().tag())
        .app_version("3.14.3")
        .layout(FakeLayout::PaseoManaged)
        .runner(runner())
        .build_install()
        .unwrap();
    let env = env_of(&[("XDG_DATA_HOME", data.path().to_str().unwrap())]);
    let registry = RecordedRegistry::default();
    let nothing_else = Platform::from_rust("macos", "aarch64");
    // On macOS (no /Applications/ZCode.app here) the managed folder is the first that exists.
    let mac_node = {
        let root = resolve_install_root(&search(None, &env, None, &registry), &nothing_else);
        // A darwin-arm64 process finds no Node entry for itself in a linux-x64 folder.
        let root = root.unwrap();
        assert_eq!(root.source, RootSource::PaseoManaged);
        assert_eq!(root.path, built.install_root);
        root.given_nodes
    };
    assert!(mac_node.is_empty(), "{mac_node:?}");

    // Pointing at the folder, or at its runtime entry, brings the folder's Node along.
    for pointed in [&built.root, &built.install_root] {
        let root =
            resolve_install_root(&search(Some(pointed), &env, None, &registry), &linux()).unwrap();
        assert_eq!(root.source, RootSource::Flag);
        assert_eq!(root.path, built.install_root);
        let nodes: Vec<&Path> = root.given_nodes.iter().map(|n| n.path.as_path()).collect();
        assert_eq!(nodes, [built.node.as_deref().unwrap()], "{}", pointed.display());
    }
}
