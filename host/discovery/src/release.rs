//! One release against what the install holds: versions first, then each file's pinned hash
//! (a file without a pin must still exist and is listed as unpinned), then required exports.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use zcode_contract::Release;

use crate::archive::HostArchive;
use crate::files::{contain, join_relative};
use crate::hashing::{FileFacts, FileSource, HashCache};
use crate::inspect::utf8;
use crate::verdict::{Accepted, Findings, FoundFile, GateRule, Refusal};

/// Each file a release names, by its path: (absolute location, facts), or why it is unusable.
pub(crate) type HostFiles = HashMap<String, Result<(String, Arc<FileFacts>), String>>;

/// Where release file paths are relative to.
pub(crate) enum FileBase<'a> {
    /// The folder holding the host archive; a path through the archive's name reads inside it.
    Desktop { resources: PathBuf, archive_name: String, archive: &'a HostArchive },
    /// The runtime directory.
    Runtime { dir: PathBuf },
}

impl FileBase<'_> {
    /// Locates `path` (a validated relative path); the file must stay inside `root`.
    fn locate(&self, root: &Path, path: &str) -> Result<(String, FileSource), String> {
        let plain = |base: &Path| -> Result<(String, FileSource), String> {
            let real = contain(root, &join_relative(base, path), &format!("file `{path}`"))?;
            if !real.is_file() {
                return Err(format!("file `{path}` is not a regular file"));
            }
            Ok((utf8(&real)?.to_string(), FileSource::Plain(real)))
        };
        match self {
            FileBase::Desktop { resources, archive_name, archive } => match path.split_once('/') {
                Some((first, inner)) if first == archive_name => {
                    let located = archive.locate(root, inner)?;
                    Ok((utf8(&located.location)?.to_string(), located.source))
                }
                _ => plain(resources),
            },
            FileBase::Runtime { dir } => plain(dir),
        }
    }
}

/// Locates and hashes every file that `releases` name (each path once), recording what was
/// found in `findings`.
pub(crate) fn hash_files<'r>(
    root: &Path,
    base: &FileBase<'_>,
    cache: &HashCache,
    releases: impl Iterator<Item = &'r Release>,
    findings: &mut Findings,
) -> HostFiles {
    let mut files = HostFiles::new();
    for file in releases.flat_map(|release| &release.files) {
        if files.contains_key(&file.path) {
            continue;
        }
        let found = base.locate(root, &file.path).and_then(|(location, source)| {
            let facts = cache.facts(&source)?;
            Ok((location, facts))
        });
        findings.host_files.push(FoundFile {
            path: file.path.clone(),
            location: found.as_ref().ok().map(|(location, _)| location.clone()),
            sha256: found.as_ref().ok().map(|(_, facts)| facts.sha256.clone()),
            error: found.as_ref().err().cloned(),
        });
        files.insert(file.path.clone(), found);
    }
    files
}

/// Versions, then file pins, then required exports.
pub(crate) fn judge_release(
    release: &Release,
    findings: &Findings,
    files: &HostFiles,
) -> Result<Accepted, Refusal> {
    check_versions(release, findings)?;
    let mut checked = Vec::new();
    let mut unpinned = Vec::new();
    for file in &release.files {
        let refuse = |why: String| {
            Refusal::new(GateRule::HostFiles, format!("file `{}` ({}) {why}", file.path, file.role))
        };
        let (location, facts) = match files.get(&file.path) {
            Some(Ok(found)) => found,
            Some(Err(error)) => return Err(refuse(format!("cannot be checked: {error}"))),
            None => return Err(refuse("was not inspected".into())),
        };
        match &file.sha256 {
            Some(pinned) if *pinned != facts.sha256 => {
                return Err(refuse(format!(
                    "hash does not match: found {}, pinned {pinned}",
                    facts.sha256
                )));
            }
            Some(_) => {}
            None => unpinned.push(file.role.clone()),
        }
        checked.push((file, location, facts));
    }
    for (file, _, facts) in &checked {
        if let Some(name) = file.required_exports.iter().find(|n| !facts.exports.contains(*n)) {
            return Err(Refusal::new(
                GateRule::Exports,
                format!("file `{}` ({}) is missing required export `{name}`", file.path, file.role),
            ));
        }
    }
    Ok(Accepted {
        release_id: release.id.clone(),
        simulated: release.simulated,
        files: checked
            .iter()
            .map(|(file, location, _)| (file.role.clone(), location.to_string()))
            .collect(),
        unpinned,
        identity: release.identity.clone(),
    })
}

fn check_versions(release: &Release, findings: &Findings) -> Result<(), Refusal> {
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
            return Err(refuse(format!("the ZCode CLI version could not be determined: {error}")));
        }
    };
    if *app != release.app_version || *cli != release.cli_version {
        return Err(refuse(format!(
            "ZCode app or CLI version does not match: found app {app} / CLI {cli}, expected \
             app {} / CLI {}",
            release.app_version, release.cli_version
        )));
    }
    Ok(())
}
