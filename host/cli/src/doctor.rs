//! `doctor` and `version`: what is installed, whether it is verified, and whether a session
//! could start (a smoke start of the host, then a clean shutdown).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use zcode_discovery::{Discovery, DoctorReport, DropInReport, SmokeResult};

use crate::Target;
use crate::launcher::Launcher;

pub fn run(target: &Target, json: bool) -> ExitCode {
    let (discovery, smoke, drop_ins) = match inspect(target) {
        Ok(found) => found,
        Err(error) => {
            eprintln!("zcode-acp: {error}");
            return ExitCode::FAILURE;
        }
    };
    let home = dirs::home_dir();
    let report = DoctorReport::new(&discovery, home.as_deref(), smoke).with_drop_ins(drop_ins);
    if json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_text());
    }
    if report.ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}

/// Discovery, then a smoke start of the selected install's host; and every drop-in mapper
/// file with its trust state.
fn inspect(target: &Target) -> Result<(Discovery, Option<SmokeResult>, Vec<DropInReport>), String> {
    let launcher = Launcher::new(target.clone())?;
    let discovery = launcher.discover()?;
    let smoke = discovery.selected().map(|selected| smoke_start(&launcher, selected));
    let drop_ins = launcher.prepared()?.mappers.drop_ins.clone();
    Ok((discovery, smoke, drop_ins))
}

fn smoke_start(launcher: &Arc<Launcher>, selected: &zcode_discovery::Selected) -> SmokeResult {
    let started = Instant::now();
    let outcome = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
        .and_then(|rt| {
            rt.block_on(async {
                let host = launcher.start(selected).await.map_err(|e| e.to_string())?;
                let workspace = std::env::temp_dir();
                // The probe carries the facts a session would get; the mapper's `notes` in
                // its answer are printed as they are (`SmokeResult::notes`).
                let probe = host.bridge.connection_op(host.probe_op(&workspace)).await;
                host.bridge.shutdown().await;
                probe
                    .map(|result| serde_json::from_str(&result.response).ok())
                    .map_err(|e| zcode_coordinator::CoordinatorError::from(e).to_string())
            })
        });
    let duration_ms = started.elapsed().as_millis() as u64;
    match outcome {
        Ok(probe) => SmokeResult::passed(
            duration_ms,
            "the host started, answered initialize and shut down cleanly".into(),
            probe,
        ),
        Err(detail) => SmokeResult::failed(duration_ms, detail),
    }
}

pub fn version(target: &Target) -> ExitCode {
    println!("zcode-acp {}", env!("CARGO_PKG_VERSION"));
    println!("ACP 1");
    println!("WIT {}", zcode_contract::WIT_PACKAGE);
    println!("simulated releases (--simulate-version): {}", zcode_sim::profile_names().join(", "));
    let Ok(launcher) = Launcher::new(target.clone()) else { return ExitCode::FAILURE };
    match launcher.prepared() {
        Ok(prepared) => {
            for mapper in &prepared.mappers.mappers {
                let contract = mapper.contract();
                let releases: Vec<String> = contract
                    .releases
                    .iter()
                    .map(|r| format!("{} (ZCode {}, CLI {})", r.id, r.app_version, r.cli_version))
                    .collect();
                println!(
                    "mapper {} {}: {}",
                    mapper.source(),
                    contract.protocol_id,
                    releases.join(", ")
                );
            }
        }
        Err(error) => println!("mappers: {error}"),
    }
    if let Ok(discovery) = launcher.discover()
        && let Some(inspection) = &discovery.inspection
        && let Some(verdict) = inspection.verdicts.iter().find(|v| v.findings.files.is_some())
    {
        let found = &verdict.findings;
        let app = found.app_version.as_deref().unwrap_or("unknown");
        let cli = found.cli_version.as_deref().unwrap_or("unknown");
        println!("ZCode {app} (CLI {cli}) at {}", inspection.install_root.display());
    } else {
        println!("ZCode not found (see `zcode-acp doctor`)");
    }
    ExitCode::SUCCESS
}
