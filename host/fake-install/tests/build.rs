//! Fake installs on disk: layouts, the launcher, variants and the command line.

use std::path::Path;
use std::process::Command;

use zcode_contract::Os;
use zcode_fake_install::{
    CLI_ENTRY, FakeInstall, FakeInstallError, HOST_INDEX, HOST_INDEX_PATH, HOST_RPC_CHUNK_PATH,
    Runner, Variant, WRONG_APP_VERSION, layout_paths, main_with_args,
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
