//! The compatibility gate: one install root against every mapper's contract.
//!
//! Rules are applied in the reference's order (§1.6): contract, layout, paths, metadata
//! semantics, platform, metadata entry, then per artifact app/CLI versions, host file hashes
//! and required exports. The first failing rule is the reason. A CLI entry whose hash differs
//! is accepted as `modified` when the host files match; the app build and the metadata hash
//! are diagnostics only.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use zcode_contract::{Artifact, Contract, Os, Platform};

use crate::archive::HostArchive;
use crate::contract_check::validate_contract;
use crate::files::{contain, join_relative, resolve_files};
use crate::hashing::{FileFacts, FileSource, HashCache, sha256_hex};
use crate::metadata::{MAX_METADATA, check_metadata, parse_metadata, value_of};
use crate::probe::{ProbeCommand, probe_version};
use crate::verdict::{
    Accepted, ArtifactExpectation, ArtifactVerdict, CliIntegrity, ContractOutcome, ContractVerdict,
    Findings, FoundFile, GateRule, Inspection, InstallFiles, Refusal,
};

/// Placeholder in `cli-version-probe` args for the absolute CLI entry path.
const CLI_ENTRY_PLACEHOLDER: &str = "{cli-entry}";
/// The package manifest inside the host archive that names the app version.
const APP_PACKAGE: &str = "package.json";
/// macOS bundle information (app build, diagnostic only).
const INFO_PLIST: &str = "Contents/Info.plist";

/// A mapper's contract and where the mapper came from.
#[derive(Clone, Copy, Debug)]
pub struct MapperContract<'a> {
    pub source: &'a str,
    pub contract: &'a Contract,
}

impl<'a> From<(&'a str, &'a Contract)> for MapperContract<'a> {
    fn from((source, contract): (&'a str, &'a Contract)) -> Self {
        Self { source, contract }
    }
}

/// Applies contracts to install roots.
#[derive(Clone, Copy)]
pub struct Inspector<'a> {
    /// The process platform the install must be built for.
    pub platform: &'a Platform,
    pub cache: &'a HashCache,
    pub probe_timeout: Duration,
}

impl<'a> Inspector<'a> {
    pub const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(10);

    /// An inspector for `platform` with the process-wide hash cache.
    pub fn new(platform: &'a Platform) -> Self {
        Self { platform, cache: HashCache::global(), probe_timeout: Self::DEFAULT_PROBE_TIMEOUT }
    }

    /// Applies each mapper's contract to the install at `root`.
    pub fn inspect(&self, root: &Path, mappers: &[MapperContract<'_>]) -> Inspection {
        let canonical = if root.is_absolute() {
            std::fs::canonicalize(root)
        } else {
            Err(std::io::Error::other("it is not absolute"))
        };
        let mut probes = HashMap::new();
        let verdicts = mappers
            .iter()
            .map(|mapper| {
                let mut run = ContractRun {
                    inspector: self,
                    contract: mapper.contract,
                    findings: Findings::default(),
                };
                let outcome = match &canonical {
                    Ok(root) => run.judge(root, &mut probes),
                    Err(e) => ContractOutcome::Refused(Refusal::new(
                        GateRule::Paths,
                        format!("the install root {} cannot be resolved: {e}", root.display()),
                    )),
                };
                ContractVerdict {
                    source: mapper.source.to_string(),
                    protocol_id: mapper.contract.protocol_id.clone(),
                    expects: ArtifactExpectation::of(mapper.contract),
                    findings: run.findings,
                    outcome,
                }
            })
            .collect();
        Inspection {
            install_root: canonical.unwrap_or_else(|_| root.to_path_buf()),
            platform: self.platform.clone(),
            verdicts,
        }
    }
}

type Probes = HashMap<ProbeCommand, Result<String, String>>;
type HostFiles = HashMap<String, Result<(String, Arc<FileFacts>), String>>;

/// One contract being applied; gathers findings as it goes.
struct ContractRun<'r, 'a> {
    inspector: &'r Inspector<'a>,
    contract: &'r Contract,
    findings: Findings,
}

impl ContractRun<'_, '_> {
    fn judge(&mut self, root: &Path, probes: &mut Probes) -> ContractOutcome {
        match self.judge_install(root, probes) {
            Ok(host_files) => ContractOutcome::Compared(
                self.contract
                    .artifacts
                    .iter()
                    .map(|artifact| ArtifactVerdict {
                        artifact_id: artifact.id.clone(),
                        result: self.judge_artifact(artifact, &host_files),
                    })
                    .collect(),
            ),
            Err(refusal) => ContractOutcome::Refused(refusal),
        }
    }

    /// The rules that hold for every artifact of the contract. Returns the host files.
    fn judge_install(&mut self, root: &Path, probes: &mut Probes) -> Result<HostFiles, Refusal> {
        let contract = self.contract;
        validate_contract(contract)
            .map_err(|e| Refusal::new(GateRule::Contract, format!("malformed contract: {e}")))?;
        let platform = self.inspector.platform;
        let os = platform.os.ok_or_else(|| {
            Refusal::new(GateRule::Layout, format!("Unsupported platform: {}", platform.node_os))
        })?;
        let layout = contract.layout(os).ok_or_else(|| {
            Refusal::new(GateRule::Layout, format!("the contract has no layout for {os:?}"))
        })?;
        let paths = |reason: String| Refusal::new(GateRule::Paths, reason);
        utf8(root).map_err(paths)?;
        let files = resolve_files(root, layout).map_err(paths)?;
        for path in [&files.executable, &files.cli_entry, &files.metadata, &files.host_archive] {
            utf8(path).map_err(paths)?;
        }
        self.findings.files = Some(files.clone());

        let metadata = read_metadata(&files.metadata).map_err(paths)?;
        self.findings.metadata_sha256 = Some(sha256_hex(&metadata));
        let cli = self.inspector.cache.facts(&FileSource::Plain(files.cli_entry.clone()));
        self.findings.cli_sha256 = Some(cli.map_err(paths)?.sha256.clone());
        let archive =
            HostArchive::open(&files.host_archive, files.host_archive_kind).map_err(paths)?;
        self.read_app_version(root, &archive);
        if os == Os::Macos {
            self.findings.app_build = read_app_build(root);
        }
        let host_files = self.hash_host_files(root, &archive);

        let entries = parse_metadata(&metadata).map_err(|e| Refusal::new(GateRule::Metadata, e))?;
        self.findings.metadata_platform =
            value_of(&entries, &contract.metadata_platform_key).map(str::to_string);
        let cli_name = files.cli_entry.file_name().unwrap_or_default().to_string_lossy();
        check_metadata(&entries, contract, &platform.tag(), &cli_name)?;

        let command = self.probe_command(root, &files);
        let version = probes
            .entry(command)
            .or_insert_with_key(|command| probe_version(command, self.inspector.probe_timeout));
        match version {
            Ok(version) => self.findings.cli_version = Some(version.clone()),
            Err(error) => self.findings.cli_version_error = Some(error.clone()),
        }
        Ok(host_files)
    }

    fn read_app_version(&mut self, root: &Path, archive: &HostArchive) {
        let version = archive.read_small(root, APP_PACKAGE, MAX_METADATA).and_then(|bytes| {
            match serde_json::from_slice::<serde_json::Value>(&bytes) {
                Ok(package) => match package.get("version") {
                    Some(serde_json::Value::String(version)) => Ok(version.clone()),
                    _ => Err(format!("{APP_PACKAGE} in the host archive has no string `version`")),
                },
                Err(e) => Err(format!("{APP_PACKAGE} in the host archive is not JSON: {e}")),
            }
        });
        match version {
            Ok(version) => self.findings.app_version = Some(version),
            Err(error) => self.findings.app_version_error = Some(error),
        }
    }

    /// Hashes every host file any artifact names (each path once).
    fn hash_host_files(&mut self, root: &Path, archive: &HostArchive) -> HostFiles {
        let mut host_files = HostFiles::new();
        for file in self.contract.artifacts.iter().flat_map(|a| &a.files) {
            if host_files.contains_key(&file.path) {
                continue;
            }
            let found = archive.locate(root, &file.path).and_then(|located| {
                let location = utf8(&located.location)?.to_string();
                let facts = self.inspector.cache.facts(&located.source)?;
                Ok((location, facts))
            });
            self.findings.host_files.push(FoundFile {
                path: file.path.clone(),
                location: found.as_ref().ok().map(|(location, _)| location.clone()),
                sha256: found.as_ref().ok().map(|(_, facts)| facts.sha256.clone()),
                error: found.as_ref().err().cloned(),
            });
            host_files.insert(file.path.clone(), found);
        }
        host_files
    }

    fn probe_command(&self, root: &Path, files: &InstallFiles) -> ProbeCommand {
        let probe = &self.contract.cli_version_probe;
        let cli_entry = files.cli_entry.to_string_lossy();
        ProbeCommand {
            program: files.executable.clone(),
            args: probe.args.iter().map(|a| a.replace(CLI_ENTRY_PLACEHOLDER, &cli_entry)).collect(),
            env: probe.env.clone(),
            cwd: root.to_path_buf(),
        }
    }

    /// Versions, then host file hashes, then required exports; the CLI hash only decides
    /// `verified` or `modified`.
    fn judge_artifact(
        &self,
        artifact: &Artifact,
        host_files: &HostFiles,
    ) -> Result<Accepted, Refusal> {
        self.check_versions(artifact)?;
        let mut checked = Vec::new();
        for file in &artifact.files {
            let refuse = |why: String| {
                Refusal::new(
                    GateRule::HostFiles,
                    format!("host file `{}` ({}) {why}", file.path, file.role),
                )
            };
            let (location, facts) = match host_files.get(&file.path) {
                Some(Ok(found)) => found,
                Some(Err(error)) => return Err(refuse(format!("cannot be checked: {error}"))),
                None => return Err(refuse("was not inspected".into())),
            };
            if facts.sha256 != file.sha256 {
                return Err(refuse(format!(
                    "hash does not match: found {}, expected {}",
                    facts.sha256, file.sha256
                )));
            }
            checked.push((file, location, facts));
        }
        for (file, _, facts) in &checked {
            if let Some(name) = file.required_exports.iter().find(|n| !facts.exports.contains(*n)) {
                return Err(Refusal::new(
                    GateRule::Exports,
                    format!(
                        "host file `{}` ({}) is missing required export `{name}`",
                        file.path, file.role
                    ),
                ));
            }
        }
        let cli_sha256 = self.findings.cli_sha256.as_deref().unwrap_or_default();
        Ok(Accepted {
            artifact_id: artifact.id.clone(),
            simulated: artifact.simulated,
            cli_integrity: if cli_sha256 == artifact.cli_sha256 {
                CliIntegrity::Verified
            } else {
                CliIntegrity::Modified
            },
            expected_cli_sha256: artifact.cli_sha256.clone(),
            files: checked
                .iter()
                .map(|(file, location, _)| (file.role.clone(), location.to_string()))
                .collect(),
        })
    }

    fn check_versions(&self, artifact: &Artifact) -> Result<(), Refusal> {
        let findings = &self.findings;
        let refuse = |reason: String| Refusal::new(GateRule::Versions, reason);
        let app = match (&findings.app_version, &findings.app_version_error) {
            (Some(app), _) => app,
            (None, error) => {
                let error = error.as_deref().unwrap_or("not read");
                return Err(refuse(format!("the ZCode app version could not be read: {error}")));
            }
        };
        let cli = match (&findings.cli_version, &findings.cli_version_error) {
            (Some(cli), _) => cli,
            (None, error) => {
                let error = error.as_deref().unwrap_or("not probed");
                return Err(refuse(format!(
                    "the ZCode CLI version could not be determined: {error}"
                )));
            }
        };
        if *app != artifact.app_version || *cli != artifact.cli_version {
            return Err(refuse(format!(
                "ZCode app or CLI version does not match: found app {app} / CLI {cli}, \
                 expected app {} / CLI {}",
                artifact.app_version, artifact.cli_version
            )));
        }
        Ok(())
    }
}

fn utf8(path: &Path) -> Result<&str, String> {
    path.to_str().ok_or_else(|| format!("{} is not a valid UTF-8 path", path.display()))
}

fn read_metadata(path: &Path) -> Result<Vec<u8>, String> {
    let len = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if len > MAX_METADATA {
        return Err(format!(
            "the bundle metadata {} is larger than {MAX_METADATA} bytes",
            path.display()
        ));
    }
    std::fs::read(path)
        .map_err(|e| format!("cannot read the bundle metadata {}: {e}", path.display()))
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
