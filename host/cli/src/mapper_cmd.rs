//! `mapper info|test|list|trust|untrust|install`: mappers in isolation, no ZCode needed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;
use zcode_contract::{Contract, Layout, LayoutKind, Mapper};
use zcode_mapper_runtime::{CacheOutcome, WasmMapper};
use zcode_mapper_trust::{TrustStore, read_capped, sha256_hex};

use crate::Target;
use crate::launcher::Launcher;
use crate::mappers::{self, drop_in_dir};
use crate::paths;

#[derive(Subcommand)]
pub enum MapperCommand {
    /// Print a mapper's contract: which ZCode installs and releases it accepts, and how.
    Info {
        /// A mapper component (.wasm), or `embedded` for the built-in ones.
        mapper: String,
        /// Print the contract as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Replay a golden trace through a mapper and compare (see docs/golden-traces.md).
    Test {
        /// A mapper component (.wasm), or `embedded:<name>`.
        mapper: String,
        /// The trace (JSON Lines).
        trace: PathBuf,
    },
    /// List the mappers this process would use: the embedded ones with their releases, and
    /// every drop-in with its trust state.
    List,
    /// Trust a drop-in mapper file: record its SHA-256 so that it may be loaded. A mapper
    /// runs code as you; trust only files whose origin you know.
    Trust {
        /// The mapper component (.wasm).
        file: PathBuf,
    },
    /// Stop trusting a drop-in mapper file.
    Untrust {
        /// The mapper component (.wasm).
        file: PathBuf,
    },
    /// Check that a mapper loads and speaks this contract, copy it into the drop-in folder and
    /// trust the copy.
    Install {
        /// The mapper component (.wasm).
        file: PathBuf,
    },
}

pub fn run(target: &Target, command: MapperCommand) -> ExitCode {
    match command {
        MapperCommand::Info { mapper, json } => match load(&mapper) {
            Ok(mappers) => {
                for mapper in mappers {
                    print_contract(mapper.as_ref(), json);
                }
                ExitCode::SUCCESS
            }
            Err(error) => fail(&error),
        },
        MapperCommand::Test { mapper, trace } => test(&mapper, &trace),
        MapperCommand::List => list(target),
        MapperCommand::Trust { file } => result(trust(target, &file)),
        MapperCommand::Untrust { file } => result(untrust(&file)),
        MapperCommand::Install { file } => result(install(target, &file)),
    }
}

fn test(mapper: &str, trace: &Path) -> ExitCode {
    let mappers = match load(mapper) {
        Ok(mappers) if mappers.len() == 1 => mappers,
        Ok(_) => return fail("name one mapper (a .wasm file or embedded:<name>)"),
        Err(error) => return fail(&error),
    };
    let text = match std::fs::read_to_string(trace) {
        Ok(text) => text,
        Err(error) => return fail(&format!("cannot read {}: {error}", trace.display())),
    };
    let report = zcode_golden::replay(mappers[0].as_ref(), &text);
    print!("{}", report.render());
    ExitCode::from(u8::try_from(report.exit_code()).unwrap_or(2))
}

fn list(target: &Target) -> ExitCode {
    let launcher = match Launcher::new(target.clone()) {
        Ok(launcher) => launcher,
        Err(error) => return fail(&error),
    };
    match launcher.prepared() {
        Ok(prepared) => {
            let set = &prepared.mappers;
            for mapper in &set.mappers {
                let contract = mapper.contract();
                println!("{}\t{}\t{}", mapper.source(), contract.protocol_id, releases(contract));
            }
            match &set.drop_in_dir {
                Some(dir) => println!("drop-in folder: {}", dir.display()),
                None => println!("drop-in folder: none"),
            }
            for drop_in in &set.drop_ins {
                let state = match (&drop_in.error, &drop_in.trust_command) {
                    (None, _) => format!("{}, loaded", drop_in.trust),
                    (Some(error), Some(command)) => {
                        format!(
                            "{}, not loaded ({error}); trust it with `{command}`",
                            drop_in.trust
                        )
                    }
                    (Some(error), None) => format!("{}, not loaded: {error}", drop_in.trust),
                };
                let first_line = state.lines().next().unwrap_or_default().to_string();
                println!("{}\t{first_line}", drop_in.path);
            }
            ExitCode::SUCCESS
        }
        Err(error) => fail(&error),
    }
}

/// `id (desktop app/CLI, pinned|unpinned[, simulated])`, for every release of `contract`.
fn releases(contract: &Contract) -> String {
    let releases: Vec<String> = contract
        .releases
        .iter()
        .map(|r| {
            let kind = match r.kind {
                LayoutKind::Desktop => "desktop",
                LayoutKind::Runtime => "runtime",
            };
            let pinning = if r.pinned() { "pinned" } else { "unpinned" };
            let simulated = if r.simulated { ", simulated" } else { "" };
            format!(
                "{} ({kind} {} / CLI {}, {pinning}{simulated})",
                r.id, r.app_version, r.cli_version
            )
        })
        .collect();
    releases.join(", ")
}

/// Records the SHA-256 of `file` (as it is now) in the trust file.
fn trust(target: &Target, file: &Path) -> Result<(), String> {
    let path =
        std::fs::canonicalize(file).map_err(|e| format!("cannot find {}: {e}", file.display()))?;
    let bytes = read_capped(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let sha256 = sha256_hex(&bytes);
    let store = paths::trust_file().ok_or("no config folder for the trust file (is $HOME set?)")?;
    TrustStore::trust(&store, &path, &sha256).map_err(|e| e.to_string())?;
    println!("trusted {} (sha256 {sha256})", path.display());
    precompile(&path, &bytes);
    let folder = drop_in_dir(target).and_then(|dir| std::fs::canonicalize(dir).ok());
    if folder.as_deref() != path.parent() {
        let folder = folder.map_or("none".to_string(), |dir| dir.display().to_string());
        println!(
            "note: only files in the drop-in folder ({folder}) are loaded; `zcode-acp mapper \
             install {}` copies it there",
            path.display()
        );
    }
    Ok(())
}

/// Loads a newly trusted file once, so that its compiled code is in the mapper cache and the
/// first session that uses it does not wait for the compiler. Trust is recorded either way: a
/// file that does not load is only reported (a session would report it too).
fn precompile(path: &Path, bytes: &[u8]) {
    let loaded = mappers::runtime().and_then(|runtime| {
        runtime.load_bytes(&path.display().to_string(), bytes).map_err(|e| e.to_string())
    });
    match loaded.as_ref().map(|mapper| mapper.cache_outcome()) {
        Ok(CacheOutcome::Hit) => println!("already precompiled in the mapper cache"),
        Ok(CacheOutcome::Miss | CacheOutcome::Replaced(_)) => {
            println!("precompiled into the mapper cache")
        }
        Ok(CacheOutcome::Disabled | CacheOutcome::Embedded | CacheOutcome::EmbeddedInPlace) => {}
        Err(error) => println!("note: it does not load as a mapper: {error}"),
    }
}

fn untrust(file: &Path) -> Result<(), String> {
    // A file that is gone can still be untrusted by the path it had.
    let path = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let store = paths::trust_file().ok_or("no config folder for the trust file (is $HOME set?)")?;
    let (_, removed) = TrustStore::revoke(&store, &path).map_err(|e| e.to_string())?;
    if removed {
        println!("no longer trusted: {}", path.display());
    } else {
        println!("was not trusted: {}", path.display());
    }
    Ok(())
}

/// Loads `file` (it must be a component of this WIT contract), copies it into the drop-in
/// folder atomically, and trusts the copy.
fn install(target: &Target, file: &Path) -> Result<(), String> {
    let bytes = read_capped(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    // With the runtime's cache: the check compiles the mapper into it, so the first session
    // that uses the installed copy (the same bytes) loads it precompiled.
    let runtime = mappers::runtime()?;
    let mapper = runtime
        .load_bytes(&file.display().to_string(), &bytes)
        .map_err(|e| format!("{} is not a usable mapper: {e}", file.display()))?;
    let name = file
        .file_name()
        .filter(|name| Path::new(name).extension().is_some_and(|ext| ext == "wasm"))
        .ok_or_else(|| format!("{} is not a .wasm file", file.display()))?;
    let dir = drop_in_dir(target)
        .or_else(paths::default_mappers_dir)
        .ok_or("no data folder for the drop-in mappers (is $HOME set?)")?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("cannot create the mappers folder {}: {e}", dir.display()))?;
    let destination = dir.join(name);
    write_atomically(&destination, &bytes)?;
    let destination = std::fs::canonicalize(&destination).map_err(|e| e.to_string())?;
    let sha256 = sha256_hex(&bytes);
    let store = paths::trust_file().ok_or("no config folder for the trust file (is $HOME set?)")?;
    TrustStore::trust(&store, &destination, &sha256).map_err(|e| e.to_string())?;
    let contract = mapper.contract();
    println!(
        "installed {} ({}, {zcode})",
        destination.display(),
        contract.protocol_id,
        zcode = zcode_contract::WIT_PACKAGE
    );
    println!("trusted sha256 {sha256}");
    println!("releases: {}", releases(contract));
    Ok(())
}

/// Writes `bytes` to a temporary file beside `path` and renames it over `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let temp = path.with_extension(format!("wasm.tmp-{}", std::process::id()));
    let written = std::fs::File::create(&temp)
        .and_then(|mut out| out.write_all(bytes).and_then(|()| out.sync_all()))
        .and_then(|()| std::fs::rename(&temp, path));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        format!("cannot write {}: {e}", path.display())
    })
}

/// `embedded` (all built-in), `embedded:<name>`, or a component file.
fn load(which: &str) -> Result<Vec<Arc<WasmMapper>>, String> {
    let runtime = mappers::runtime()?;
    if let Some(rest) = which.strip_prefix("embedded") {
        let name = rest.strip_prefix(':');
        let chosen: Vec<_> = zcode_embedded_mappers::EMBEDDED
            .iter()
            .filter(|(n, _)| name.is_none_or(|wanted| wanted == *n))
            .collect();
        if chosen.is_empty() {
            return Err(format!("no embedded mapper named {}", name.unwrap_or_default()));
        }
        return chosen.into_iter().map(|(n, _)| mappers::load_embedded(&runtime, n)).collect();
    }
    Ok(vec![runtime.load_file(Path::new(which)).map_err(|e| e.to_string())?])
}

fn print_contract(mapper: &dyn Mapper, json: bool) {
    let contract = mapper.contract();
    if json {
        let value = serde_json::json!({ "source": mapper.source(), "contract": contract });
        println!("{}", serde_json::to_string_pretty(&value).expect("contracts serialize"));
        return;
    }
    println!("mapper: {}", mapper.source());
    println!("protocol: {}", contract.protocol_id);
    println!("description: {}", contract.description);
    for release in &contract.releases {
        let kind = if release.simulated { " (simulator)" } else { "" };
        println!("release: {}{kind}", release.id);
        let identity =
            release.identity.as_deref().map(|i| format!(", identity {i}")).unwrap_or_default();
        println!(
            "  {:?} ZCode {} / CLI {}{identity}",
            release.kind, release.app_version, release.cli_version
        );
        for file in &release.files {
            let exports = if file.required_exports.is_empty() {
                String::new()
            } else {
                format!(", exports {}", file.required_exports.join(" "))
            };
            let sha = file.sha256.as_deref().unwrap_or("unpinned");
            println!("  {} {} sha256 {sha}{exports}", file.role, file.path);
        }
    }
    for layout in &contract.layouts {
        match layout {
            Layout::Desktop(d) => {
                let metadata: Vec<String> =
                    d.metadata_pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
                println!(
                    "layout desktop {:?}: executable {}, cli {}, metadata {} ({}; {} = this \
                     platform, {} = the CLI file name), host archive {}",
                    d.os,
                    d.executable,
                    d.cli_entry,
                    d.metadata,
                    metadata.join(", "),
                    d.metadata_platform_key,
                    d.metadata_entry_key,
                    d.host_archive
                );
            }
            Layout::Runtime(r) => println!(
                "layout runtime: directory {}, package {} ({}), cli {}, Node {} or newer ({})",
                r.runtime_dir,
                r.package_file,
                r.package_pairs
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                r.cli_entry,
                r.min_node_version,
                r.node_candidates.join(", ")
            ),
        }
    }
    println!("credentials file: ~/{}", contract.credentials_file);
}

fn result(outcome: Result<(), String>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(&error),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("zcode-acp: {message}");
    ExitCode::FAILURE
}
