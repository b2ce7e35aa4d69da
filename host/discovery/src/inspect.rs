//! The compatibility gate: one install root against every mapper's contract.
//!
//! Per contract: the contract is validated, the layout the root looks like is chosen (the
//! desktop layout of this OS or the runtime layout), that layout's install rules are applied
//! (`desktop.rs`, `runtime.rs`), then every release of that layout kind is compared
//! (`release.rs`). The first failing rule is the reason. Nothing is guessed: an install whose
//! versions no release names is refused.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use zcode_contract::{Contract, DesktopLayout, Layout, Platform, RuntimeLayout};

use crate::contract_check::validate_contract;
use crate::files::join_relative;
use crate::hashing::HashCache;
use crate::node::{NodeCandidate, NodeIdentity};
use crate::probe::ProbeCommand;
use crate::release::judge_release;
use crate::verdict::{
    ContractOutcome, ContractVerdict, Findings, GateRule, Inspection, Refusal, ReleaseExpectation,
    ReleaseVerdict,
};

/// Placeholder in `cli-version-probe` args for the absolute CLI entry path.
pub(crate) const CLI_ENTRY_PLACEHOLDER: &str = "{cli-entry}";

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

/// The install to inspect, with the Nodes a runtime layout may use.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstallTarget {
    pub root: PathBuf,
    /// The Node the user named (`--zcode-node`), or why it cannot be used. When present it is
    /// the only Node a runtime may run on.
    pub explicit_node: Option<Result<NodeCandidate, String>>,
    /// Nodes that came with the root (a managed runtimes folder), tried before the layout's
    /// own candidates.
    pub given_nodes: Vec<NodeCandidate>,
    /// The user's home directory (handed to the mapper with the verified install).
    pub home: Option<PathBuf>,
}

impl InstallTarget {
    /// A root with no Node given and no home directory.
    pub fn root(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into(), ..Self::default() }
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

    /// Applies each mapper's contract to the install `target`.
    pub fn inspect(&self, target: &InstallTarget, mappers: &[MapperContract<'_>]) -> Inspection {
        let root = &target.root;
        let canonical = if root.is_absolute() {
            crate::files::canonical(root)
        } else {
            Err(std::io::Error::other("it is not absolute"))
        };
        let mut runs = Runs::default();
        let verdicts = mappers
            .iter()
            .map(|mapper| {
                let mut run = ContractRun {
                    inspector: self,
                    contract: mapper.contract,
                    target,
                    findings: Findings::default(),
                };
                let outcome = match &canonical {
                    Ok(root) => run.judge(root, &mut runs),
                    Err(e) => ContractOutcome::Refused(Refusal::new(
                        GateRule::Paths,
                        format!("the install root {} cannot be resolved: {e}", root.display()),
                    )),
                };
                ContractVerdict {
                    source: mapper.source.to_string(),
                    protocol_id: mapper.contract.protocol_id.clone(),
                    expects: ReleaseExpectation::of(mapper.contract),
                    findings: run.findings,
                    outcome,
                }
            })
            .collect();
        Inspection {
            install_root: canonical.unwrap_or_else(|_| root.to_path_buf()),
            platform: self.platform.clone(),
            home: target.home.clone(),
            verdicts,
        }
    }
}

/// Programs run during one inspection, each once however many contracts ask.
#[derive(Default)]
pub(crate) struct Runs {
    pub versions: HashMap<ProbeCommand, Result<String, String>>,
    pub nodes: HashMap<ProbeCommand, Result<NodeIdentity, String>>,
}

/// The layout a root is judged by.
enum Chosen<'c> {
    Desktop(&'c DesktopLayout),
    Runtime(&'c RuntimeLayout),
}

/// One contract being applied; gathers findings as it goes.
pub(crate) struct ContractRun<'r, 'a> {
    pub inspector: &'r Inspector<'a>,
    pub contract: &'r Contract,
    pub target: &'r InstallTarget,
    pub findings: Findings,
}

impl ContractRun<'_, '_> {
    fn judge(&mut self, root: &Path, runs: &mut Runs) -> ContractOutcome {
        let judged = validate_contract(self.contract)
            .map_err(|e| Refusal::new(GateRule::Contract, format!("malformed contract: {e}")))
            .and_then(|()| choose_layout(self.contract, self.inspector.platform, root))
            .and_then(|chosen| match chosen {
                Chosen::Desktop(layout) => self.judge_desktop(root, layout, runs),
                Chosen::Runtime(layout) => self.judge_runtime(root, layout, runs),
            });
        match judged {
            Ok(host_files) => {
                let kind = self.findings.layout.expect("a judged install has a layout");
                ContractOutcome::Compared(
                    self.contract
                        .releases
                        .iter()
                        .filter(|release| release.kind == kind)
                        .map(|release| ReleaseVerdict {
                            release_id: release.id.clone(),
                            result: judge_release(
                                release,
                                &self.findings,
                                &host_files,
                                &self.contract.facts,
                            ),
                        })
                        .collect(),
                )
            }
            Err(refusal) => ContractOutcome::Refused(refusal),
        }
    }

    /// `<executable> <probe args>` in the root, once per inspection.
    pub(crate) fn probe_cli_version(
        &mut self,
        root: &Path,
        executable: &Path,
        cli_entry: &Path,
        runs: &mut Runs,
    ) {
        let probe = &self.contract.cli_version_probe;
        let cli_entry = cli_entry.to_string_lossy();
        let command = ProbeCommand {
            program: executable.to_path_buf(),
            args: probe.args.iter().map(|a| a.replace(CLI_ENTRY_PLACEHOLDER, &cli_entry)).collect(),
            env: probe.env.clone(),
            cwd: root.to_path_buf(),
        };
        let timeout = self.inspector.probe_timeout;
        let version = runs
            .versions
            .entry(command)
            .or_insert_with_key(|command| crate::probe::probe_version(command, timeout));
        match version {
            Ok(version) => self.findings.cli_version = Some(version.clone()),
            Err(error) => self.findings.cli_version_error = Some(error.clone()),
        }
    }
}

/// The desktop layout of this OS when the root has its executable or host archive, else the
/// runtime layout when the root has a runtime package file; with only one layout in the
/// contract, that one (so its own rules say what is missing).
fn choose_layout<'c>(
    contract: &'c Contract,
    platform: &Platform,
    root: &Path,
) -> Result<Chosen<'c>, Refusal> {
    let os = platform.os.ok_or_else(|| {
        Refusal::new(GateRule::Layout, format!("Unsupported platform: {}", platform.node_os))
    })?;
    let desktop = contract.desktop_layout(os);
    let runtime = contract.runtime_layout();
    let present = |relative: &str| join_relative(root, relative).symlink_metadata().is_ok();
    // The executable must be a file: a runtime folder's `zcode/` directory is not Linux's
    // `zcode` executable.
    let looks_desktop = |layout: &DesktopLayout| {
        present(&layout.host_archive) || join_relative(root, &layout.executable).is_file()
    };
    let looks_runtime = |layout: &RuntimeLayout| {
        let dir = if layout.runtime_dir == "." {
            layout.package_file.clone()
        } else {
            format!("{}/{}", layout.runtime_dir, layout.package_file)
        };
        present(&dir) || present(&layout.package_file)
    };
    match (desktop, runtime) {
        (Some(layout), _) if looks_desktop(layout) => Ok(Chosen::Desktop(layout)),
        (_, Some(layout)) if looks_runtime(layout) => Ok(Chosen::Runtime(layout)),
        (Some(layout), None) => Ok(Chosen::Desktop(layout)),
        (None, Some(layout)) => Ok(Chosen::Runtime(layout)),
        (Some(desktop), Some(runtime)) => Err(Refusal::new(
            GateRule::Layout,
            format!(
                "the install root {} is neither a desktop app (it has no `{}`) nor a \
                 runtime folder (it has no `{}/{}` or `{}`)",
                root.display(),
                desktop.executable,
                runtime.runtime_dir,
                runtime.package_file,
                runtime.package_file
            ),
        )),
        (None, None) => {
            let kinds: Vec<&str> = contract
                .layouts
                .iter()
                .map(|layout| match layout {
                    Layout::Desktop(_) => "a desktop app on another OS",
                    Layout::Runtime(_) => "a runtime",
                })
                .collect();
            Err(Refusal::new(
                GateRule::Layout,
                format!("the contract has no layout for {os:?} (it drives {})", kinds.join(", ")),
            ))
        }
    }
}

pub(crate) fn utf8(path: &Path) -> Result<&str, String> {
    path.to_str().ok_or_else(|| format!("{} is not a valid UTF-8 path", path.display()))
}

/// The releases of `kind` (the ones compared with an install of that layout).
pub(crate) fn releases_of(
    contract: &Contract,
    kind: zcode_contract::LayoutKind,
) -> impl Iterator<Item = &zcode_contract::Release> {
    contract.releases.iter().filter(move |release| release.kind == kind)
}
