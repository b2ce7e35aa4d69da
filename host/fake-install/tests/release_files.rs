//! Files a release adds to its install: ZCode 3.12 and later bundle the built-in provider config
//! beside their host archive; 3.11.2 does not.

use std::path::Path;

use zcode_contract::Os;
use zcode_fake_install::{FakeInstall, PROVIDER_CONFIG, Runner, layout_paths};

fn runner() -> Runner {
    Runner { program: "/bin/true".into(), args: Vec::new() }
}

fn provider_config(root: &Path, os: Os) -> std::path::PathBuf {
    let resources = match os {
        Os::Macos => "Contents/Resources",
        Os::Linux | Os::Windows => "resources",
    };
    root.join(resources).join("config/provider/zcode-builtin.json")
}

#[test]
fn a_3_12_3_install_bundles_the_provider_config_beside_its_host_archive() {
    for os in [Os::Linux, Os::Macos, Os::Windows] {
        let dir = tempfile::tempdir().unwrap();
        let root = FakeInstall::builder(dir.path().join("ZCode"))
            .os(os)
            .app_version("3.12.3")
            .runner(runner())
            .build()
            .unwrap();
        assert!(layout_paths(os).host_archive.ends_with("app.asar"));
        let config = std::fs::read(provider_config(&root, os)).unwrap();
        assert_eq!(config, PROVIDER_CONFIG, "{os:?}");
        let parsed: serde_json::Value = serde_json::from_slice(&config).unwrap();
        assert!(parsed.is_object(), "the host needs a JSON object");
    }
}

#[test]
fn later_desktop_releases_bundle_it_too() {
    for version in ["3.14.5", "3.19.0", "4.0.0"] {
        let dir = tempfile::tempdir().unwrap();
        let root = FakeInstall::builder(dir.path().join("ZCode"))
            .os(Os::Linux)
            .app_version(version)
            .runner(runner())
            .build()
            .unwrap();
        assert!(provider_config(&root, Os::Linux).is_file(), "{version}");
    }
}

#[test]
fn a_3_11_2_install_has_no_provider_config() {
    let dir = tempfile::tempdir().unwrap();
    let root = FakeInstall::builder(dir.path().join("ZCode"))
        .os(Os::Linux)
        .runner(runner())
        .build()
        .unwrap();
    assert!(!provider_config(&root, Os::Linux).exists());
    assert!(!root.join("resources/config").exists());
}
