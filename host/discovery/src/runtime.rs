//! The install rules of a standalone runtime layout: the runtime directory (inside the root,
//! or the root itself), its package file (exact pairs, `version` is the app version), the CLI
//! entry, a verified Node, and the CLI version probe run with that Node.

use std::path::{Path, PathBuf};

use serde_json::Value;
use zcode_contract::{LayoutKind, RuntimeLayout};

use crate::desktop::{package_version, read_small_file};
use crate::files::{contain, executable_file, join_relative, readable_file};
use crate::hashing::sha256_hex;
use crate::inspect::{ContractRun, Runs, releases_of, utf8};
use crate::node::{NodeCandidate, NodeCheck, NodeSource, identify, judge};
use crate::probe::ProbeCommand;
use crate::release::{FileBase, HostFiles, hash_files};
use crate::verdict::{ArchiveKind, GateRule, InstallFiles, Refusal};

impl ContractRun<'_, '_> {
    /// The rules that hold for every runtime release. Returns the release files found.
    pub(crate) fn judge_runtime(
        &mut self,
        root: &Path,
        layout: &RuntimeLayout,
        runs: &mut Runs,
    ) -> Result<HostFiles, Refusal> {
        self.findings.layout = Some(LayoutKind::Runtime);
        let paths = |reason: String| Refusal::new(GateRule::Paths, reason);
        utf8(root).map_err(paths)?;
        let dir = runtime_dir(root, layout).map_err(paths)?;
        let package = contain(root, &join_relative(&dir, &layout.package_file), "the package file")
            .map_err(paths)?;
        let cli_entry = contain(root, &join_relative(&dir, &layout.cli_entry), "the CLI entry")
            .map_err(paths)?;
        readable_file(&package, "the package file").map_err(paths)?;
        readable_file(&cli_entry, "the CLI entry").map_err(paths)?;
        for path in [&dir, &package, &cli_entry] {
            utf8(path).map_err(paths)?;
        }
        self.findings.files = Some(InstallFiles {
            kind: LayoutKind::Runtime,
            executable: None,
            cli_entry: cli_entry.clone(),
            metadata: package.clone(),
            host_archive: dir.clone(),
            host_archive_kind: ArchiveKind::Directory,
        });

        let bytes = read_small_file(&package, "the package file").map_err(paths)?;
        self.findings.metadata_sha256 = Some(sha256_hex(&bytes));
        match package_version(&bytes) {
            Ok(version) => self.findings.app_version = Some(version),
            Err(error) => {
                self.findings.app_version_error = Some(format!("the package file {error}"))
            }
        }
        let base = FileBase::Runtime { dir: dir.clone() };
        let releases = releases_of(self.contract, LayoutKind::Runtime);
        let host_files =
            hash_files(root, &base, self.inspector.cache, releases, &mut self.findings);
        check_package(&bytes, layout)?;

        let node = self.choose_node(root, layout, runs)?;
        if let Some(files) = &mut self.findings.files {
            files.executable = Some(node.clone());
        }
        self.probe_cli_version(root, &node, &cli_entry, runs);
        Ok(host_files)
    }

    /// The first Node that passes: the one the user named (then no other), else those that
    /// came with the root, then the layout's candidates inside the root.
    fn choose_node(
        &mut self,
        root: &Path,
        layout: &RuntimeLayout,
        runs: &mut Runs,
    ) -> Result<PathBuf, Refusal> {
        let refuse = |reason: String| Refusal::new(GateRule::Node, reason);
        let candidates: Vec<NodeCandidate> = match &self.target.explicit_node {
            Some(Err(error)) => return Err(refuse(error.clone())),
            Some(Ok(node)) => vec![node.clone()],
            None => {
                let mut candidates = self.target.given_nodes.clone();
                for relative in &layout.node_candidates {
                    let path = join_relative(root, relative);
                    if path.symlink_metadata().is_err() {
                        continue;
                    }
                    match contain(root, &path, "the Node") {
                        Ok(path) => {
                            candidates.push(NodeCandidate { path, source: NodeSource::Install })
                        }
                        Err(error) => return Err(refuse(error)),
                    }
                }
                candidates
            }
        };
        if candidates.is_empty() {
            return Err(refuse(format!(
                "no Node to run the runtime: none of {} exists in {}; name one with \
                 --zcode-node <absolute path> (Node {} or newer)",
                layout.node_candidates.join(", "),
                root.display(),
                layout.min_node_version
            )));
        }
        for candidate in candidates {
            let check = self.check_node(root, layout, &candidate, runs);
            let accepted = check.accepted;
            self.findings.nodes.push(check);
            if accepted {
                return Ok(candidate.path);
            }
        }
        let problems: Vec<String> =
            self.findings.nodes.iter().filter_map(|check| check.problem.clone()).collect();
        Err(refuse(problems.join("; ")))
    }

    fn check_node(
        &self,
        root: &Path,
        layout: &RuntimeLayout,
        candidate: &NodeCandidate,
        runs: &mut Runs,
    ) -> NodeCheck {
        let path = &candidate.path;
        let mut check = NodeCheck {
            path: path.display().to_string(),
            source: candidate.source,
            version: None,
            electron: None,
            accepted: false,
            problem: None,
        };
        let usable = readable_file(path, "the Node")
            .and_then(|()| executable_file(path, "the Node"))
            .and_then(|()| utf8(path).map(drop));
        if let Err(problem) = usable {
            check.problem = Some(problem);
            return check;
        }
        // The contract's probe environment keeps an Electron app in Node mode while asked.
        let env = self.contract.cli_version_probe.env.clone();
        let key = ProbeCommand { program: path.clone(), args: Vec::new(), env, cwd: root.into() };
        let timeout = self.inspector.probe_timeout;
        let identity = runs
            .nodes
            .entry(key)
            .or_insert_with_key(|key| identify(&key.program, &key.env, &key.cwd, timeout));
        match identity {
            Ok(identity) => {
                check.version = Some(identity.version.clone());
                check.electron = identity.electron.clone();
                match judge(path, identity, &layout.min_node_version) {
                    Ok(()) => check.accepted = true,
                    Err(problem) => check.problem = Some(problem),
                }
            }
            Err(error) => {
                check.problem = Some(format!("{} cannot be run: {error}", path.display()))
            }
        }
        check
    }
}

/// `<root>/<runtime-dir>` when it holds the package file, else the root itself when it does
/// (the user pointed at the runtime directory).
fn runtime_dir(root: &Path, layout: &RuntimeLayout) -> Result<PathBuf, String> {
    let mut tried = Vec::new();
    if layout.runtime_dir != "." {
        tried.push(join_relative(root, &layout.runtime_dir));
    }
    tried.push(root.to_path_buf());
    for dir in &tried {
        if join_relative(dir, &layout.package_file).is_file() {
            return contain(root, dir, "the runtime directory");
        }
    }
    let missing: Vec<String> = tried
        .iter()
        .map(|dir| join_relative(dir, &layout.package_file).display().to_string())
        .collect();
    Err(format!("no runtime directory: {} does not exist", missing.join(" nor ")))
}

/// The package file is a JSON object whose pairs equal the layout's (besides `version`).
fn check_package(bytes: &[u8], layout: &RuntimeLayout) -> Result<(), Refusal> {
    let refuse = |reason: String| Refusal::new(GateRule::Metadata, reason);
    let package: serde_json::Map<String, Value> = serde_json::from_slice(bytes)
        .map_err(|e| refuse(format!("the runtime package file is not a JSON object: {e}")))?;
    for (key, expected) in &layout.package_pairs {
        match package.get(key) {
            Some(Value::String(value)) if value == expected => {}
            Some(other) => {
                return Err(refuse(format!(
                    "the runtime package file's `{key}` is {other}, expected `{expected}`"
                )));
            }
            None => return Err(refuse(format!("the runtime package file lacks `{key}`"))),
        }
    }
    Ok(())
}
