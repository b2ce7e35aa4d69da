//! One release against what the install holds: versions first, then each file's pinned hash
//! (a file without a pin must still exist and is listed as unpinned), then required exports.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use zcode_contract::{
    FactKind, FactSource, FactValue, Facts, MAX_FACT_BYTES, MAX_FACT_FILE_BYTES, Release,
};

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
    let paths = releases.flat_map(|release| {
        let files = release.files.iter().map(|file| &file.path);
        files.chain(release.data_files.iter().map(|data| &data.path))
    });
    for path in paths {
        if files.contains_key(path) {
            continue;
        }
        let found = base.locate(root, path).and_then(|(location, source)| {
            let facts = cache.facts(&source)?;
            Ok((location, facts))
        });
        findings.host_files.push(FoundFile {
            path: path.clone(),
            location: found.as_ref().ok().map(|(location, _)| location.clone()),
            sha256: found.as_ref().ok().map(|(_, facts)| facts.sha256.clone()),
            error: found.as_ref().err().cloned(),
        });
        files.insert(path.clone(), found);
    }
    files
}

/// Versions, then file pins, then required exports, then data files and the install facts
/// `facts` declares.
pub(crate) fn judge_release(
    release: &Release,
    findings: &Findings,
    files: &HostFiles,
    facts: &[FactSource],
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
    let mut located: Vec<(String, String)> = checked
        .iter()
        .map(|(file, location, _)| (file.role.clone(), location.to_string()))
        .collect();
    let mut documents = HashMap::new();
    for data in &release.data_files {
        let refuse = |why: String| {
            Refusal::new(
                GateRule::HostFiles,
                format!("data file `{}` ({}) {why}", data.path, data.role),
            )
        };
        let location = match files.get(&data.path) {
            Some(Ok((location, _))) => location,
            Some(Err(error)) => return Err(refuse(format!("cannot be read: {error}"))),
            None => return Err(refuse("was not inspected".into())),
        };
        documents.insert(data.role.clone(), read_json(Path::new(location)).map_err(refuse)?);
        located.push((data.role.clone(), location.clone()));
    }
    let install_facts = install_facts(facts, &located, &mut documents)?;
    Ok(Accepted {
        facts: install_facts,
        release_id: release.id.clone(),
        simulated: release.simulated,
        files: located,
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

/// A data file or a pinned file a fact reads: a plain JSON file of at most 1 MiB.
fn read_json(path: &Path) -> Result<Value, String> {
    let size = std::fs::metadata(path).map_err(|e| format!("cannot be read: {e}"))?.len();
    if size > MAX_FACT_FILE_BYTES {
        return Err(format!(
            "is {size} bytes, over the {MAX_FACT_FILE_BYTES} bytes a data file may have"
        ));
    }
    let text = std::fs::read(path).map_err(|e| format!("cannot be read: {e}"))?;
    serde_json::from_slice(&text).map_err(|e| format!("is not JSON: {e}"))
}

/// The contract's `install-json` and `install-path` facts of this release. A role the release
/// lacks, or a missing value, is `null`; a value over 256 KiB refuses the release.
fn install_facts(
    facts: &[FactSource],
    located: &[(String, String)],
    documents: &mut HashMap<String, Value>,
) -> Result<Facts, Refusal> {
    let mut out = Facts::new();
    for fact in facts {
        let location = |role: &str| located.iter().find(|(r, _)| r == role).map(|(_, l)| l);
        let value = match &fact.kind {
            FactKind::InstallPath(role) => {
                location(role).map(|l| Value::String(l.clone())).unwrap_or(Value::Null)
            }
            FactKind::InstallJson(json) => {
                let Some(path) = location(&json.file) else {
                    out.push((fact.name.clone(), FactValue::Json("null".into())));
                    continue;
                };
                if !documents.contains_key(&json.file) {
                    let document = read_json(Path::new(path)).map_err(|why| {
                        Refusal::new(
                            GateRule::HostFiles,
                            format!("file `{path}` ({}) {why}", json.file),
                        )
                    })?;
                    documents.insert(json.file.clone(), document);
                }
                documents[&json.file].pointer(&json.pointer).cloned().unwrap_or(Value::Null)
            }
            FactKind::UserJson(_) | FactKind::CredentialPresence(_) => continue,
        };
        let text = value.to_string();
        if text.len() > MAX_FACT_BYTES {
            return Err(Refusal::new(
                GateRule::HostFiles,
                format!(
                    "install fact `{}` is {} bytes, over {MAX_FACT_BYTES}",
                    fact.name,
                    text.len()
                ),
            ));
        }
        out.push((fact.name.clone(), FactValue::Json(text)));
    }
    Ok(out)
}
