//! The mapper components built into the `zcode-acp` binary: every ZCode generation of the
//! mappers workspace (`mappers/Cargo.toml`), built by this crate's build script (see
//! `build.rs`). Each is named after its crate, which is its protocol id: `zcode-services-v4`
//! (the standalone runtime), `zcode-app-server` (Desktop 3.14 and later), `zcode-task-v2`
//! (ZCode 3.12.3) and `zcode-task-v1` (ZCode 3.11.2), newest first. The examples
//! (`mappers/examples/*`, e.g. `echo-v1`) are built with them but not embedded: tests load them
//! as drop-ins from [`EXAMPLES`]. Their precompiled code and contracts are
//! `zcode-precompiled-mappers`.

include!(concat!(env!("OUT_DIR"), "/embedded.rs"));

/// The built component of the example mapper `name`, for tests.
pub fn example(name: &str) -> Option<&'static std::path::Path> {
    EXAMPLES
        .iter()
        .find(|(example, _)| *example == name)
        .map(|(_, path)| std::path::Path::new(*path))
}

/// The embedded mapper named `name`.
pub fn get(name: &str) -> Option<&'static [u8]> {
    EMBEDDED.iter().find(|(embedded, _)| *embedded == name).map(|(_, bytes)| *bytes)
}

#[cfg(test)]
#[path = "../guest_build.rs"]
#[allow(dead_code)] // the build script uses the rest
mod guest_build;

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::guest_build::*;

    #[test]
    fn a_missing_target_names_the_fix() {
        let err = check_sysroot_has_target(Path::new("/nonexistent-sysroot")).unwrap_err();
        assert!(err.contains("run `rustup target add wasm32-wasip2`"), "{err}");
    }

    #[test]
    fn outer_build_settings_do_not_reach_the_nested_build() {
        for name in [
            "CARGO_TARGET_DIR",
            "RUSTFLAGS",
            "CARGO_ENCODED_RUSTFLAGS",
            "CARGO_BUILD_TARGET",
            "CARGO_BUILD_RUSTFLAGS",
            "RUSTC_WORKSPACE_WRAPPER",
            "CARGO_PROFILE_RELEASE_OPT_LEVEL",
            "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER",
            "CARGO_FEATURE_STD",
            "CARGO_CFG_TARGET_OS",
            "OUT_DIR",
        ] {
            assert!(leaks_into_nested_build(name), "{name}");
        }
        for name in ["PATH", "HOME", "CARGO_HOME", "RUSTUP_HOME", "RUSTC", "CARGO_MAKEFLAGS"] {
            assert!(!leaks_into_nested_build(name), "{name}");
        }
    }

    #[test]
    fn the_nested_target_dir_is_beside_the_outer_profiles_for_every_target() {
        let gnu = "x86_64-unknown-linux-gnu";
        let out = Path::new("/t/debug/build/zcode-embedded-mappers-0123/out");
        assert_eq!(nested_target_dir(out, gnu), Path::new("/t/mappers"));
        // A build for a named target shares the host build's components.
        let musl = "x86_64-unknown-linux-musl";
        let cross = Path::new("/t/x86_64-unknown-linux-musl/release/build/p-1/out");
        assert_eq!(nested_target_dir(cross, musl), Path::new("/t/mappers"));
    }

    #[test]
    fn lists_the_component_members_of_a_workspace_in_order() {
        let dir = std::env::temp_dir().join(format!("guest-workspace-test-{}", std::process::id()));
        for (member, crate_type) in [("b-v2", "cdylib"), ("lib", "rlib"), ("a-v1", "cdylib")] {
            std::fs::create_dir_all(dir.join(member)).unwrap();
            std::fs::write(
                dir.join(member).join("Cargo.toml"),
                format!("[package]\nname = \"{member}\"\n[lib]\ncrate-type = [\"{crate_type}\", \"rlib\"]\n"),
            )
            .unwrap();
        }
        let manifest = dir.join("Cargo.toml");
        std::fs::write(
            &manifest,
            "[workspace]\nmembers = [\n    \"b-v2\",\n    # a library\n    \"lib\", \"a-v1\",\n]\n",
        )
        .unwrap();
        assert_eq!(workspace_members(&manifest).unwrap(), ["b-v2", "lib", "a-v1"]);
        assert_eq!(
            workspace_components(&manifest).unwrap(),
            [
                ("b-v2".to_string(), "b-v2".to_string(), "b_v2".to_string()),
                ("a-v1".to_string(), "a-v1".to_string(), "a_v1".to_string())
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_component_is_named_after_the_library() {
        let dir = std::env::temp_dir().join(format!("guest-build-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = dir.join("Cargo.toml");
        std::fs::write(&manifest, "[package]\nname = \"zcode-task-v1\"\n[lib]\n").unwrap();
        assert_eq!(lib_name(&manifest).unwrap(), "zcode_task_v1");
        std::fs::write(&manifest, "[package]\nname = \"a-b\"\n[lib]\nname = \"c_d\"\n").unwrap();
        assert_eq!(lib_name(&manifest).unwrap(), "c_d");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
