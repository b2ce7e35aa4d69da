//! The install rules of a desktop layout (an Electron app): its files as one set inside the
//! root, the bundle metadata (keys, platform, entry), the app version from the host archive's
//! `package.json`, and the CLI version from the version probe.

use std::path::Path;

use zcode_contract::{DesktopLayout, LayoutKind, Os};

use crate::archive::HostArchive;
use crate::files::{contain, join_relative, resolve_desktop_files};
use crate::hashing::sha256_hex;
use crate::inspect::{ContractRun, Runs, releases_of, utf8};
use crate::metadata::{MAX_METADATA, check_metadata, parse_metadata, value_of};
use crate::release::{FileBase, HostFiles, hash_files};
use crate::verdict::{GateRule, Refusal};

/// The package manifest inside the host archive that names the app version.
const APP_PACKAGE: &str = "package.json";
/// macOS bundle information (app build, diagnostic only).
const INFO_PLIST: &str = "Contents/Info.plist";

impl ContractRun<'_, '_> {
    /// The rules that hold for every desktop release. Returns the release files found.
    pub(crate) fn judge_desktop(
        &mut self,
        root: &Path,
        layout: &DesktopLayout,
        runs: &mut Runs,
    ) -> Result<HostFiles, Refusal> {
        self.findings.layout = Some(LayoutKind::Desktop);
        let paths = |reason: String| Refusal::new(GateRule::Paths, reason);
        utf8(root).map_err(paths)?;
        let files = resolve_desktop_files(root, layout).map_err(paths)?;
        let executable = files.executable.clone().expect("a desktop install has an executable");
        for path in [&executable, &files.cli_entry, &files.metadata, &files.host_archive] {
            utf8(path).map_err(paths)?;
        }
        self.findings.files = Some(files.clone());

        let metadata = read_small_file(&files.metadata, "the bundle metadata").map_err(paths)?;
        self.findings.metadata_sha256 = Some(sha256_hex(&metadata));
        let archive =
            HostArchive::open(&files.host_archive, files.host_archive_kind).map_err(paths)?;
        self.read_app_version(root, &archive);
        if layout.os == Os::Macos {
            self.findings.app_build = read_app_build(root);
        }
        let resources =
            files.host_archive.parent().map_or_else(|| root.to_path_buf(), Path::to_path_buf);
        let archive_name = files.host_archive.file_name().unwrap_or_default();
        let base = FileBase::Desktop {
            resources,
            archive_name: archive_name.to_string_lossy().into_owned(),
            archive: &archive,
        };
        let releases = releases_of(self.contract, LayoutKind::Desktop);
        let host_files =
            hash_files(root, &base, self.inspector.cache, releases, &mut self.findings);

        let entries = parse_metadata(&metadata).map_err(|e| Refusal::new(GateRule::Metadata, e))?;
        self.findings.metadata_platform =
            value_of(&entries, &layout.metadata_platform_key).map(str::to_string);
        let cli_name = files.cli_entry.file_name().unwrap_or_default().to_string_lossy();
        check_metadata(&entries, layout, &self.inspector.platform.tag(), &cli_name)?;

        self.probe_cli_version(root, &executable, &files.cli_entry, runs);
        Ok(host_files)
    }

    fn read_app_version(&mut self, root: &Path, archive: &HostArchive) {
        let version = archive.read_small(root, APP_PACKAGE, MAX_METADATA).and_then(|bytes| {
            package_version(&bytes).map_err(|e| format!("{APP_PACKAGE} in the host archive {e}"))
        });
        match version {
            Ok(version) => self.findings.app_version = Some(version),
            Err(error) => self.findings.app_version_error = Some(error),
        }
    }
}

/// The string `version` of a package manifest (the error completes "<file> …").
pub(crate) fn package_version(bytes: &[u8]) -> Result<String, String> {
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(package) => match package.get("version") {
            Some(serde_json::Value::String(version)) => Ok(version.clone()),
            _ => Err("has no string `version`".to_string()),
        },
        Err(e) => Err(format!("is not JSON: {e}")),
    }
}

/// Reads a small JSON file of the layout (bundle metadata, runtime package file).
pub(crate) fn read_small_file(path: &Path, what: &str) -> Result<Vec<u8>, String> {
    let len = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if len > MAX_METADATA {
        return Err(format!("{what} {} is larger than {MAX_METADATA} bytes", path.display()));
    }
    std::fs::read(path).map_err(|e| format!("cannot read {what} {}: {e}", path.display()))
}

/// `CFBundleVersion` from an XML `Contents/Info.plist`; `None` when absent or unreadable.
fn read_app_build(root: &Path) -> Option<String> {
    let path = contain(root, &join_relative(root, INFO_PLIST), "Info.plist").ok()?;
    if std::fs::metadata(&path).ok()?.len() > MAX_METADATA * 16 {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let after_key = text.split_once("<key>CFBundleVersion</key>")?.1;
    let value = after_key.trim_start().strip_prefix("<string>")?;
    let value = value.split_once("</string>")?.0.trim();
    (!value.is_empty()).then(|| value.to_string())
}
