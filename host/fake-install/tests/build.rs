//! Fake installs on disk: layouts, the launcher, variants and the command line.

use std::path::Path;
use std::process::Command;

use zcode_contract::Os;
use zcode_fake_install::{
    APPIMAGE_FILES, CLI_ENTRY, ELECTRON_CHECK_ARGS, FAKE_ELECTRON_NODE_VERSION,
    FAKE_ELECTRON_VERSION, FakeInstall, FakeInstallError, FakeLayout, HOST_INDEX, HOST_INDEX_PATH,
    HOST_RPC_CHUNK_PATH, NEWER_APP_VERSION, NODE_VERSION, NODE_VERSION_ARGS, OLD_NODE_VERSION,
    PASEO_FAKE_ARCHIVE_SHA256, PASEO_MARKER, PASEO_RUNTIMES, RUNTIME_AGENT_PATH, RUNTIME_DIR,
    RUNTIME_PACKAGE_NAME, RUNTIME_PROVIDER_CONFIG_PATH, RUNTIME_SERVER, RUNTIME_SERVER_PATH,
    Runner, Variant, WINDOWS_PRODUCT_CODE, WINDOWS_UNINSTALLER, WRONG_APP_VERSION, WindowsScope,
    layout_paths, main_with_args, paseo_node_dir, paseo_runtime_dir, write_appimage_file,
};

fn path(root: &Path, relative: &str) -> std::path::PathBuf {
    let mut path = root.to_path_buf();
    path.extend(relative.split('/'));
    path
}

/// A runner that prints the arguments it was given, one per line.
fn echo_runner() -> Runner {
    Runner {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), r#"printf '%s\n' "$@""#.into(), "sim".into()],
    }
}

#[test]
fn every_layout_is_complete_and_its_executable_hands_over_to_the_runner() {
    for os in [Os::Linux, Os::Macos, Os::Windows] {
        let dir = tempfile::tempdir().unwrap();
        let root = FakeInstall::builder(dir.path().join("Z Code's"))
            .os(os)
            .platform_tag("linux-x64")
            .runner(echo_runner())
            .build()
            .unwrap();
        let paths = layout_paths(os);
        assert_eq!(std::fs::read(path(&root, paths.cli_entry)).unwrap(), CLI_ENTRY);
        let archive = path(&root, paths.host_archive);
        assert_eq!(std::fs::read(archive.join(HOST_INDEX_PATH)).unwrap(), HOST_INDEX);
        assert!(archive.join(HOST_RPC_CHUNK_PATH).is_file());
        let package: serde_json::Value =
            serde_json::from_slice(&std::fs::read(archive.join("package.json")).unwrap()).unwrap();
        assert_eq!(package, serde_json::json!({"name": "zcode", "version": "3.11.2"}));
        let metadata: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path(&root, paths.metadata)).unwrap()).unwrap();
        assert_eq!(
            metadata,
            serde_json::json!({"runtime": "electron-node", "entry": "zcode.cjs",
                "source": "apps/zcode-cli/packages/cli/dist/zcode.cjs", "platform": "linux-x64"})
        );
        assert_eq!(path(&root, "Contents/Info.plist").is_file(), os == Os::Macos);

        let output =
            Command::new(path(&root, paths.executable)).args(["a b", "it's"]).output().unwrap();
        assert!(output.status.success(), "{os:?}: {output:?}");
        let expected = format!("--install-root\n{}\n--\na b\nit's\n", root.display());
        assert_eq!(String::from_utf8(output.stdout).unwrap(), expected, "{os:?}");
    }
}

#[test]
fn variants_break_what_they_say() {
    let build = |variant| {
        let dir = tempfile::tempdir().unwrap();
        let root = FakeInstall::builder(dir.path().join("root"))
            .os(Os::Linux)
            .platform_tag("linux-x64")
            .runner(Runner {
                program: "/bin/sh".into(),
                args: vec!["-c".into(), r#"echo "${ZCODE_SIM_CLI_VERSION:-unset}""#.into()],
            })
            .variant(variant)
            .build()
            .unwrap();
        (dir, root)
    };
    let read = |root: &Path, relative: &str| std::fs::read(path(root, relative)).unwrap();
    let archive = "resources/app.asar";

    let (_d, root) = build(Variant::TamperedHostHash);
    assert_eq!(read(&root, &format!("{archive}/{HOST_INDEX_PATH}")).len(), HOST_INDEX.len() + 1);

    let (_d, root) = build(Variant::WrongPlatform);
    assert!(
        String::from_utf8(read(&root, "resources/glm/.node-bundle-meta.json"))
            .unwrap()
            .contains("darwin-arm64")
    );

    let (_d, root) = build(Variant::WrongAppVersion);
    assert!(
        String::from_utf8(read(&root, &format!("{archive}/package.json")))
            .unwrap()
            .contains(WRONG_APP_VERSION)
    );

    let (_d, root) = build(Variant::WrongCliVersion);
    let output = Command::new(root.join("zcode")).output().unwrap();
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "0.0.2\n");
    let (_d, root) = build(Variant::Good);
    let output = Command::new(root.join("zcode")).output().unwrap();
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "unset\n");

    let (_d, root) = build(Variant::MissingFile);
    assert!(!path(&root, &format!("{archive}/{HOST_RPC_CHUNK_PATH}")).exists());

    let (_d, root) = build(Variant::ExtraMetadataKey);
    let metadata: serde_json::Value =
        serde_json::from_slice(&read(&root, "resources/glm/.node-bundle-meta.json")).unwrap();
    assert_eq!(metadata.as_object().unwrap().len(), 5);

    let (_d, root) = build(Variant::ModifiedCli);
    assert_ne!(read(&root, "resources/glm/zcode.cjs"), CLI_ENTRY);
    assert_eq!(read(&root, &format!("{archive}/{HOST_INDEX_PATH}")), HOST_INDEX);
}

#[test]
fn a_non_empty_directory_is_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("precious"), "keep").unwrap();
    let error = FakeInstall::builder(dir.path()).runner(echo_runner()).build().unwrap_err();
    assert!(matches!(error, FakeInstallError::NotEmpty(_)));
    assert_eq!(std::fs::read_to_string(dir.path().join("precious")).unwrap(), "keep");
    assert!(matches!(
        FakeInstall::builder(dir.path().join("x")).build(),
        Err(FakeInstallError::NoRunner)
    ));
}

#[test]
fn the_command_line_builds_an_install() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("cli");
    let code = main_with_args([
        root.to_str().unwrap(),
        "--os",
        "windows",
        "--variant",
        "modified-cli",
        "--runner",
        "/bin/true",
    ]);
    assert_eq!(code, std::process::ExitCode::SUCCESS);
    assert!(root.join("ZCode.exe").is_file());
    assert_ne!(std::fs::read(root.join("resources/glm/zcode.cjs")).unwrap(), CLI_ENTRY);
    let again = main_with_args([root.to_str().unwrap(), "--runner", "/bin/true"]);
    assert_eq!(again, std::process::ExitCode::FAILURE, "the directory is no longer empty");
    assert_eq!(main_with_args(["--variant", "nope"]), std::process::ExitCode::from(2));
}

/// The runner that prints its arguments, and what the fake executable at `path` says to `args`.
fn run(path: &Path, args: &[&str]) -> String {
    let output = Command::new(path).args(args).output().unwrap();
    assert!(output.status.success(), "{}: {output:?}", path.display());
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn a_runtime_folder_holds_the_runtime_directory_and_a_node() {
    let dir = tempfile::tempdir().unwrap();
    let built = FakeInstall::builder(dir.path().join("rt"))
        .os(Os::Linux)
        .app_version("3.14.3")
        .layout(FakeLayout::Runtime)
        .runner(echo_runner())
        .build_install()
        .unwrap();
    assert_eq!(built.install_root, built.root);
    let runtime = built.root.join(RUNTIME_DIR);
    let package: serde_json::Value =
        serde_json::from_slice(&std::fs::read(runtime.join("package.json")).unwrap()).unwrap();
    assert_eq!(package, serde_json::json!({"name": RUNTIME_PACKAGE_NAME, "version": "3.14.3"}));
    assert_eq!(std::fs::read(path(&runtime, RUNTIME_SERVER_PATH)).unwrap(), RUNTIME_SERVER);
    assert_eq!(std::fs::read(path(&runtime, RUNTIME_AGENT_PATH)).unwrap(), CLI_ENTRY);
    assert!(path(&runtime, RUNTIME_PROVIDER_CONFIG_PATH).is_file());
    assert!(path(&runtime, "bin/zcode.mjs").is_file());

    let node = built.node.unwrap();
    assert_eq!(node, built.root.join("node"));
    assert_eq!(run(&node, &NODE_VERSION_ARGS), format!("v{NODE_VERSION}\n"));
    assert_eq!(run(&node, &ELECTRON_CHECK_ARGS), "undefined\n");
    let handed = run(&node, &["agent/zcode.cjs", "version"]);
    assert_eq!(
        handed,
        format!("--install-root\n{}\n--\nagent/zcode.cjs\nversion\n", built.root.display())
    );
}

#[test]
fn a_paseo_managed_folder_holds_marked_node_and_runtime_entries() {
    let dir = tempfile::tempdir().unwrap();
    let runtimes = dir.path().join(PASEO_RUNTIMES);
    let built = FakeInstall::builder(&runtimes)
        .os(Os::Linux)
        .platform_tag("linux-arm64")
        .app_version("4.0.0")
        .layout(FakeLayout::PaseoManaged)
        .runner(echo_runner())
        .build_install()
        .unwrap();
    let runtime = built.root.join(paseo_runtime_dir("4.0.0"));
    assert_eq!(built.install_root, runtime);
    assert!(runtime.file_name().unwrap().to_str().unwrap().starts_with("zcode-4.0.0-"));
    assert!(runtime.join(RUNTIME_SERVER_PATH).is_file(), "the entry is the runtime directory");
    let node = built.node.unwrap();
    assert_eq!(node, built.root.join("node-v24.21.0-linux-arm64/bin/node"));
    for marker in [
        runtime.join(PASEO_MARKER),
        built.root.join("node-v24.21.0-linux-arm64").join(PASEO_MARKER),
    ] {
        let marker: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&marker).unwrap()).unwrap();
        assert_eq!(marker["archiveSha256"], PASEO_FAKE_ARCHIVE_SHA256);
    }
    assert_eq!(paseo_node_dir("24.21.0", "win32-arm64"), "node-v24.21.0-win-arm64");
    // The managed Node runs for the runtime entry.
    assert!(run(&node, &["x"]).contains(&format!("--install-root\n{}\n", runtime.display())));
}

#[test]
fn an_extracted_appimage_is_the_linux_layout_with_apprun() {
    let dir = tempfile::tempdir().unwrap();
    let root = FakeInstall::builder(dir.path().join("squashfs-root"))
        .os(Os::Macos) // ignored: an AppImage is Linux
        .layout(FakeLayout::AppImage)
        .runner(echo_runner())
        .build()
        .unwrap();
    assert!(root.join("zcode").is_file() && root.join("resources/glm/zcode.cjs").is_file());
    for file in APPIMAGE_FILES {
        assert!(root.join(file).is_file(), "{file}");
    }
    let appimage = dir.path().join("ZCode-3.14.4-linux-x64.AppImage");
    write_appimage_file(&appimage).unwrap();
    assert_eq!(&std::fs::read(&appimage).unwrap()[8..11], b"AI\x02");
}

#[test]
fn a_windows_install_has_an_uninstall_entry_without_install_location() {
    for (scope, hive, argument) in [
        (WindowsScope::PerUser, "HKCU", "/currentuser"),
        (WindowsScope::Machine, "HKLM", "/allusers"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let built = FakeInstall::builder(dir.path().join("ZCode"))
            .os(Os::Windows)
            .platform_tag("win32-arm64")
            .app_version("3.14.5")
            .windows_scope(scope)
            .runner(echo_runner())
            .build_install()
            .unwrap();
        let entry = built.uninstall_entry.unwrap();
        assert!(entry["key"].as_str().unwrap().starts_with(hive));
        assert!(entry["key"].as_str().unwrap().ends_with(WINDOWS_PRODUCT_CODE));
        assert_eq!(entry["displayName"], "ZCode 3.14.5");
        assert_eq!(entry["installLocation"], serde_json::Value::Null);
        let uninstaller = built.root.join(WINDOWS_UNINSTALLER);
        assert!(uninstaller.is_file());
        assert_eq!(entry["uninstallString"], format!("\"{}\" {argument}", uninstaller.display()));
        let metadata =
            std::fs::read_to_string(built.root.join("resources/glm/.node-bundle-meta.json"))
                .unwrap();
        assert!(metadata.contains("win32-arm64"), "{metadata}");
    }
}

#[test]
fn the_node_and_version_variants_say_what_they_are() {
    let build = |variant| {
        let dir = tempfile::tempdir().unwrap();
        let built = FakeInstall::builder(dir.path().join("rt"))
            .os(Os::Linux)
            .layout(FakeLayout::Runtime)
            .variant(variant)
            .runner(echo_runner())
            .build_install()
            .unwrap();
        (dir, built)
    };
    let (_d, old) = build(Variant::NodeTooOld);
    assert_eq!(
        run(old.node.as_ref().unwrap(), &NODE_VERSION_ARGS),
        format!("v{OLD_NODE_VERSION}\n")
    );
    let (_d, electron) = build(Variant::ElectronNode);
    let node = electron.node.as_ref().unwrap();
    assert_eq!(run(node, &ELECTRON_CHECK_ARGS), format!("{FAKE_ELECTRON_VERSION}\n"));
    assert_eq!(run(node, &NODE_VERSION_ARGS), format!("v{FAKE_ELECTRON_NODE_VERSION}\n"));
    let (_d, newer) = build(Variant::NewerVersion);
    let package = std::fs::read_to_string(newer.root.join("zcode/package.json")).unwrap();
    assert!(package.contains(NEWER_APP_VERSION), "{package}");
    let (_d, tampered) = build(Variant::TamperedHostHash);
    assert_eq!(
        std::fs::read(tampered.root.join("zcode").join(RUNTIME_SERVER_PATH)).unwrap().len(),
        RUNTIME_SERVER.len() + 1
    );
    let (_d, missing) = build(Variant::MissingFile);
    assert!(!missing.root.join("zcode").join(RUNTIME_SERVER_PATH).exists());

    // The desktop executable is an Electron app when asked.
    let dir = tempfile::tempdir().unwrap();
    let root = FakeInstall::builder(dir.path().join("ZCode"))
        .os(Os::Linux)
        .runner(echo_runner())
        .build()
        .unwrap();
    assert_eq!(
        run(&root.join("zcode"), &ELECTRON_CHECK_ARGS),
        format!("{FAKE_ELECTRON_VERSION}\n")
    );

    // A variant that means nothing for a layout is refused, not ignored.
    let dir = tempfile::tempdir().unwrap();
    let error = FakeInstall::builder(dir.path().join("x"))
        .layout(FakeLayout::Runtime)
        .variant(Variant::WrongPlatform)
        .runner(echo_runner())
        .build()
        .unwrap_err();
    assert!(matches!(error, FakeInstallError::VariantNotForLayout { .. }), "{error}");
    let error = FakeInstall::builder(dir.path().join("y"))
        .variant(Variant::NodeTooOld)
        .runner(echo_runner())
        .build()
        .unwrap_err();
    assert!(error.to_string().contains("node-too-old"), "{error}");
}
