//! Builds a mapper guest crate into a WebAssembly component with a nested `cargo build
//! --target wasm32-wasip2 --release`.
//!
//! Shared by this crate's build script and by the mapper runtime's tests (both include this
//! file with `#[path]`), so it uses only `std`. Its unit tests are in `src/lib.rs`.

use std::ffi::OsString;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub const GUEST_TARGET: &str = "wasm32-wasip2";

/// Environment variables of an outer cargo build (or a build script) that would change how the
/// nested build runs: its target, target dir, flags, profile, wrappers (clippy sets
/// `RUSTC_WORKSPACE_WRAPPER`), and the per-package values cargo gives build scripts.
const LEAKING_VARS: &[&str] = &[
    "CARGO_TARGET_DIR",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUSTC_WORKSPACE_WRAPPER",
    "OUT_DIR",
    "TARGET",
    "HOST",
    "PROFILE",
    "OPT_LEVEL",
    "DEBUG",
];
const LEAKING_PREFIXES: &[&str] = &[
    "CARGO_BUILD_",
    "CARGO_ENCODED_",
    "CARGO_PROFILE_",
    "CARGO_TARGET_",
    "CARGO_CFG_",
    "CARGO_FEATURE_",
    "__CARGO",
];

/// One guest build: a test guest, with none of the flags of the shipped mappers (`SHIPPED_FLAGS`).
pub struct GuestBuild<'a> {
    /// The cargo to run (a build script gets it in `CARGO`).
    pub cargo: OsString,
    /// The guest's `Cargo.toml`.
    pub manifest: &'a Path,
    /// Target dir of the nested build; it must not be the outer build's (that one is locked).
    pub target_dir: &'a Path,
    /// Cargo features to enable.
    pub features: &'a [&'a str],
}

impl GuestBuild<'_> {
    /// Builds the guest and returns a copy of its component, named after the crate and the
    /// features, under `<target dir>/components/`. Builds that share a target dir (for example
    /// one crate with different features) are serialized with a lock file, so each copy is the
    /// output of its own build.
    pub fn run(&self) -> Result<PathBuf, String> {
        ensure_target_installed()?;
        let lib_name = lib_name(self.manifest)?;
        let lock = lock_target_dir(self.target_dir)?;
        let mut command = nested_build(&self.cargo, self.manifest, self.target_dir, "");
        if !self.features.is_empty() {
            command.arg("--features").arg(self.features.join(","));
        }
        run_nested(command, self.manifest)?;

        let built =
            self.target_dir.join(GUEST_TARGET).join("release").join(format!("{lib_name}.wasm"));
        let mut copy_name = lib_name.clone();
        for feature in self.features {
            copy_name.push('+');
            copy_name.push_str(feature);
        }
        let components = self.target_dir.join("components");
        let copy = components.join(format!("{copy_name}.wasm"));
        fs::create_dir_all(&components)
            .and_then(|()| fs::copy(&built, &copy))
            .map_err(|e| format!("cannot copy {} to {}: {e}", built.display(), copy.display()))?;
        drop(lock);
        Ok(copy)
    }
}

/// A workspace of guest crates built at once: every member that is a component (`cdylib`), as
/// (member path, package name, component file) in the order of the workspace's `members`.
pub struct WorkspaceBuild<'a> {
    pub cargo: OsString,
    /// The workspace's `Cargo.toml`.
    pub manifest: &'a Path,
    /// Target dir of the nested build; it must not be the outer build's (that one is locked).
    pub target_dir: &'a Path,
}

impl WorkspaceBuild<'_> {
    pub fn run(&self) -> Result<Vec<(String, String, PathBuf)>, String> {
        ensure_target_installed()?;
        let components = workspace_components(self.manifest)?;
        let _lock = lock_target_dir(self.target_dir)?;
        let mut command = nested_build(&self.cargo, self.manifest, self.target_dir, SHIPPED_FLAGS);
        command.arg("--workspace");
        run_nested(command, self.manifest)?;
        let release = self.target_dir.join(GUEST_TARGET).join("release");
        Ok(components
            .into_iter()
            .map(|(member, package, lib)| (member, package, release.join(format!("{lib}.wasm"))))
            .collect())
    }
}

/// (member path, package name, library name) of each member of a workspace that builds a
/// component, in the order of its `members` list. (A line-based read is enough for the manifests
/// this builds.)
pub fn workspace_components(manifest: &Path) -> Result<Vec<(String, String, String)>, String> {
    let root = manifest.parent().unwrap_or(Path::new("."));
    let mut components = Vec::new();
    for member in workspace_members(manifest)? {
        let member_manifest = root.join(&member).join("Cargo.toml");
        let text = fs::read_to_string(&member_manifest)
            .map_err(|e| format!("cannot read {}: {e}", member_manifest.display()))?;
        if text
            .lines()
            .any(|line| line.trim_start().starts_with("crate-type") && line.contains("\"cdylib\""))
        {
            let package = package_name(&member_manifest)?;
            components.push((member, package, lib_name(&member_manifest)?));
        }
    }
    Ok(components)
}

/// The `members` of a `[workspace]` manifest, in order.
pub fn workspace_members(manifest: &Path) -> Result<Vec<String>, String> {
    let text = fs::read_to_string(manifest)
        .map_err(|e| format!("cannot read the mappers workspace {}: {e}", manifest.display()))?;
    let start = text
        .find("members = [")
        .ok_or_else(|| format!("no `members = [` in {}", manifest.display()))?;
    let list = &text[start + "members = [".len()..];
    let end =
        list.find(']').ok_or_else(|| format!("unterminated members in {}", manifest.display()))?;
    Ok(list[..end]
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default())
        .flat_map(|line| line.split(','))
        .map(|item| item.trim().trim_matches('"').to_string())
        .filter(|item| !item.is_empty())
        .collect())
}

/// Serializes builds that share a target dir; held until dropped.
fn lock_target_dir(target_dir: &Path) -> Result<File, String> {
    fs::create_dir_all(target_dir)
        .map_err(|e| format!("cannot create {}: {e}", target_dir.display()))?;
    let lock_path = target_dir.join(".guest-build.lock");
    File::create(&lock_path)
        .and_then(|file| file.lock().map(|()| file))
        .map_err(|e| format!("cannot lock {}: {e}", lock_path.display()))
}

/// `cargo build --manifest-path <manifest> --target wasm32-wasip2 --release --target-dir <dir>`
/// with none of the outer build's settings, and `flags` beside the path remapping.
fn nested_build(cargo: &OsString, manifest: &Path, target_dir: &Path, flags: &str) -> Command {
    let mut command = Command::new(cargo);
    command
        .arg("build")
        .arg("--manifest-path")
        .arg(manifest)
        .args(["--target", GUEST_TARGET, "--release"])
        .arg("--target-dir")
        .arg(target_dir);
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if leaks_into_nested_build(&name) {
            command.env_remove(name.as_ref());
        }
    }
    // Panic locations name source files: keep the builder's paths out of shipped components
    // (and the components the same wherever the tree is checked out).
    command.env("RUSTFLAGS", format!("{} {flags}", remap_flags(manifest)));
    // A build script's stdout is read by cargo as directives: keep cargo's output on stderr.
    command.stdout(Stdio::from(std::io::stderr()));
    command
}

/// Flags of the workspace build, which builds the mappers zcode-acp ships. LLVM inlines up to a
/// threshold of 1000 instead of its default 225: in WebAssembly a call costs a frame and a fuel
/// check, and a mapped event took about a sixth less CPU, for components a third larger (issue
/// 27's eighteenth session in `docs/performance.md`; 2500 and 6000 were no faster). With
/// `simd128`, memchr's searches and LLVM's loops over bytes use WebAssembly's 128-bit vectors,
/// which wasmtime's engine has always had enabled (its default): zcode-acp's CPU per Desktop
/// delta fell by about a fifth (the twenty-eighth session). Test guests ([`GuestBuild`]) go
/// without both: the hostile drop-in (`opt-level = "s"`) took twice as long to build with the
/// threshold and came out five times the size, for tests that time nothing.
const SHIPPED_FLAGS: &str = "-C llvm-args=-inline-threshold=1000 -C target-feature=+simd128";

/// `--remap-path-prefix` for the repository (the folder above the manifest's `mappers/`) and
/// for cargo's home (crate sources).
fn remap_flags(manifest: &Path) -> String {
    let mut flags = Vec::new();
    let repository = manifest
        .canonicalize()
        .ok()
        .and_then(|m| m.ancestors().find(|a| a.join("wit").is_dir()).map(Path::to_path_buf));
    if let Some(repository) = repository {
        flags.push(format!("--remap-path-prefix={}=/zcode-acp", repository.display()));
    }
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")));
    if let Some(cargo_home) = cargo_home {
        flags.push(format!("--remap-path-prefix={}=/cargo", cargo_home.display()));
    }
    flags.join(" ")
}

fn run_nested(mut command: Command, manifest: &Path) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|e| format!("cannot run {}: {e}", command.get_program().to_string_lossy()))?;
    if status.success() {
        return Ok(());
    }
    Err(format!(
        "building the mapper guest {} for {GUEST_TARGET} failed ({status}); see the cargo \
         output above",
        manifest.display()
    ))
}

pub fn leaks_into_nested_build(name: &str) -> bool {
    LEAKING_VARS.contains(&name) || LEAKING_PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

/// Makes sure the toolchain has the guest target: when it is missing and the toolchain is
/// managed by rustup, installs it (so `cargo build` alone works on a fresh machine), else fails
/// with the fix.
fn ensure_target_installed() -> Result<(), String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", rustc.to_string_lossy()))?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    if check_sysroot_has_target(&sysroot).is_ok() {
        return Ok(());
    }
    // rustup sets RUSTUP_TOOLCHAIN for the cargo it runs: add the target to that toolchain.
    let installed = Command::new("rustup")
        .args(["target", "add", GUEST_TARGET])
        .status()
        .is_ok_and(|status| status.success());
    if installed {
        println!(
            "cargo:warning=installed the Rust target {GUEST_TARGET} with rustup (mappers are built for it)"
        );
    }
    check_sysroot_has_target(&sysroot)
}

pub fn check_sysroot_has_target(sysroot: &Path) -> Result<(), String> {
    let target_lib = sysroot.join("lib/rustlib").join(GUEST_TARGET).join("lib");
    if target_lib.is_dir() {
        Ok(())
    } else {
        Err(format!(
            "the Rust target {GUEST_TARGET} is not installed (no {}); mappers are built for it: \
             run `rustup target add {GUEST_TARGET}`",
            target_lib.display()
        ))
    }
}

/// `<outer target dir>/mappers` for a build script's `OUT_DIR`
/// (`<target>[/<triple>]/<profile>/build/<pkg>-<hash>/out`, `target` being the build's
/// `TARGET`): beside the outer build's profile directories, whose lock the outer cargo holds
/// while the script runs, and shared by every outer profile and target, as the components do
/// not depend on either (a static build of the binary reuses the components of its tests).
pub fn nested_target_dir(out_dir: &Path, target: &str) -> PathBuf {
    let build_dir = out_dir.ancestors().find(|dir| dir.file_name().is_some_and(|n| n == "build"));
    match build_dir.and_then(Path::parent).and_then(Path::parent) {
        Some(dir) if dir.file_name().is_some_and(|n| n == target) => match dir.parent() {
            Some(root) => root.join("mappers"),
            None => dir.join("mappers"),
        },
        Some(root) => root.join("mappers"),
        None => out_dir.join("mappers-target"),
    }
}

/// The `[package] name`.
pub fn package_name(manifest: &Path) -> Result<String, String> {
    let text = fs::read_to_string(manifest).map_err(|e| {
        format!("cannot read the mapper guest manifest {}: {e}", manifest.display())
    })?;
    let mut section = "";
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if section == "[package]"
            && let Some(value) = line.strip_prefix("name")
            && let Some(value) = value.trim_start().strip_prefix('=')
        {
            return Ok(value.trim().trim_matches('"').to_string());
        }
    }
    Err(format!("no [package] name in {}", manifest.display()))
}

/// The library name cargo gives the crate's output: `[lib] name`, or the package name with
/// `-` as `_`. (A line-based read is enough for the guest manifests this builds.)
pub fn lib_name(manifest: &Path) -> Result<String, String> {
    let text = fs::read_to_string(manifest).map_err(|e| {
        format!("cannot read the mapper guest manifest {}: {e}", manifest.display())
    })?;
    let (mut section, mut package_name, mut lib_name) = ("", None, None);
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if let Some(value) = line.strip_prefix("name")
            && let Some(value) = value.trim_start().strip_prefix('=')
        {
            let value = value.trim().trim_matches('"').replace('-', "_");
            match section {
                "[package]" => package_name = Some(value),
                "[lib]" => lib_name = Some(value),
                _ => {}
            }
        }
    }
    lib_name.or(package_name).ok_or_else(|| format!("no [package] name in {}", manifest.display()))
}
