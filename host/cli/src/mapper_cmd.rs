//! `mapper info|test|list`: mappers in isolation, no ZCode needed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;
use zcode_contract::Mapper;
use zcode_mapper_runtime::{MapperRuntime, RuntimeConfig, WasmMapper};

use crate::Target;
use crate::launcher::Launcher;
use crate::paths;

#[derive(Subcommand)]
pub enum MapperCommand {
    /// Print a mapper's contract: which ZCode installs it accepts and how it launches them.
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
    /// List the mappers this process would use (embedded, then the drop-in folder).
    List,
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
    let report = zcode_contract::golden::replay(mappers[0].as_ref(), &text);
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
            match &prepared.mappers.drop_in_dir {
                Some(dir) => println!("drop-in folder: {}", dir.display()),
                None => println!("drop-in folder: none"),
            }
            for mapper in &prepared.mappers.mappers {
                println!("{}\t{}", mapper.contract().protocol_id, mapper.source());
            }
            for (path, reason) in &prepared.mappers.rejected {
                println!("refused\t{}\t{reason}", path.display());
            }
            ExitCode::SUCCESS
        }
        Err(error) => fail(&error),
    }
}

/// `embedded` (all built-in), `embedded:<name>`, or a component file.
fn load(which: &str) -> Result<Vec<Arc<WasmMapper>>, String> {
    let config = RuntimeConfig {
        cache_dir: paths::cache_dir().map(|dir| dir.join("mappers")),
        ..RuntimeConfig::default()
    };
    let runtime = MapperRuntime::new(config).map_err(|e| e.to_string())?;
    if let Some(rest) = which.strip_prefix("embedded") {
        let name = rest.strip_prefix(':');
        let chosen: Vec<_> = zcode_embedded_mappers::EMBEDDED
            .iter()
            .filter(|(n, _)| name.is_none_or(|wanted| wanted == *n))
            .collect();
        if chosen.is_empty() {
            return Err(format!("no embedded mapper named {}", name.unwrap_or_default()));
        }
        return chosen
            .into_iter()
            .map(|(n, bytes)| {
                runtime.load_bytes(&format!("embedded:{n}"), bytes).map_err(|e| e.to_string())
            })
            .collect();
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
    for artifact in &contract.artifacts {
        let kind = if artifact.simulated { " (simulator)" } else { "" };
        println!("artifact: {}{kind}", artifact.id);
        println!(
            "  ZCode {} / CLI {} (CLI sha256 {})",
            artifact.app_version, artifact.cli_version, artifact.cli_sha256
        );
        for file in &artifact.files {
            let exports = if file.required_exports.is_empty() {
                String::new()
            } else {
                format!(", exports {}", file.required_exports.join(" "))
            };
            println!("  {} {} sha256 {}{exports}", file.role, file.path, file.sha256);
        }
    }
    for layout in &contract.layouts {
        println!(
            "layout {:?}: executable {}, cli {}, metadata {}, host archive {}",
            layout.os, layout.executable, layout.cli_entry, layout.metadata, layout.host_archive
        );
    }
    let metadata: Vec<String> = contract.metadata.iter().map(|(k, v)| format!("{k}={v}")).collect();
    println!(
        "metadata: {} ({} = this platform, {} = the CLI file name)",
        metadata.join(", "),
        contract.metadata_platform_key,
        contract.metadata_entry_key
    );
    println!("credentials file: ~/{}", contract.credentials_file);
}

fn fail(message: &str) -> ExitCode {
    eprintln!("zcode-acp: {message}");
    ExitCode::FAILURE
}
