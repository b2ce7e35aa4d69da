//! Starting the host for a session: discovery and the gate pick the install and the mapper,
//! the mapper's launch plan says how to start it, the bridge starts it.
//!
//! Everything expensive (loading mappers, laying out a simulated install, hashing the
//! install) happens on first use, never at `initialize`.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use agent_client_protocol::BoxFuture;
use serde_json::json;
use zcode_bridge::{BridgeOptions, HostBridge, HostSpec};
use zcode_contract::{Mapper, Platform};
use zcode_coordinator::{CoordinatorError, FailureKind, Host, HostLauncher};
use zcode_credentials::{CredentialStore, SessionFacts};
use zcode_discovery::{Discovery, Inspector, Search, Selected, SystemRegistry, process_env};

use crate::Target;
use crate::install::{self, SimulatedInstall};
use crate::mappers::MapperSet;

pub struct Launcher {
    target: Target,
    prepared: OnceLock<Result<Prepared, String>>,
}

/// The mappers, and for `--simulate` the simulated install they are pointed at.
pub struct Prepared {
    pub mappers: MapperSet,
    pub simulated: Option<SimulatedInstall>,
}

impl Prepared {
    fn install_flag<'a>(&'a self, target: &'a Target) -> Option<&'a std::path::Path> {
        match &self.simulated {
            Some(simulated) => Some(&simulated.root),
            None => target.zcode_install.as_deref(),
        }
    }
}

impl Launcher {
    pub fn new(target: Target) -> Result<Arc<Self>, String> {
        if target.simulate && target.zcode_install.is_some() {
            return Err("--simulate and --zcode-install exclude each other".into());
        }
        Ok(Arc::new(Self { target, prepared: OnceLock::new() }))
    }

    /// Loads the mappers (and lays out the simulated install) once. Blocking.
    pub fn prepared(&self) -> Result<&Prepared, String> {
        self.prepared
            .get_or_init(|| {
                let mappers = MapperSet::load(&self.target)?;
                let simulated = match self.target.simulate {
                    true => Some(install::prepare(
                        self.target
                            .simulate_version
                            .as_deref()
                            .unwrap_or(install::DEFAULT_SIMULATED_VERSION),
                    )?),
                    false => None,
                };
                Ok(Prepared { mappers, simulated })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Discovery and the gate (blocking: it hashes files and runs the version probe).
    pub fn discover(&self) -> Result<Discovery, String> {
        let prepared = self.prepared()?;
        let platform = Platform::current();
        let inspector = Inspector::new(&platform);
        let home = dirs::home_dir();
        let search = Search {
            install_flag: prepared.install_flag(&self.target),
            node_flag: self.target.zcode_node.as_deref(),
            env: &process_env,
            home: home.as_deref(),
            registry: &SystemRegistry,
        };
        Ok(Discovery::run(&search, &inspector, &prepared.mappers.contracts()))
    }

    pub fn mapper(&self, selected: &Selected) -> Result<Arc<dyn Mapper>, String> {
        Ok(self.prepared()?.mappers.mapper(selected.mapper_index)?)
    }

    /// Starts the host for the install discovery selected.
    pub async fn start(&self, selected: &Selected) -> Result<Host, CoordinatorError> {
        if !selected.overrides.is_empty() {
            tracing::info!(
                target: "zcode_acp::host",
                mapper = %selected.source,
                overrides = %selected.overrides.join(", "),
                "a trusted drop-in mapper takes precedence over the embedded ones for this install"
            );
        }
        let mapper =
            self.mapper(selected).map_err(|e| CoordinatorError::failed(FailureKind::Mappers, e))?;
        // ZCODE_ACP_RECORD: every mapper call of this host's connection and sessions is recorded.
        let mapper = zcode_recorder::record_from_env(mapper)
            .map_err(|e| CoordinatorError::failed(FailureKind::Recording, e.to_string()))?;
        let plan = mapper.launch_plan(&selected.install)?;
        let connection = mapper.connection()?;
        let started = Instant::now();
        let credentials = CredentialStore::new(
            &selected.install.home,
            mapper.contract().credential_sources.clone(),
        );
        let facts = SessionFacts::new(
            &selected.install.home,
            selected.install.facts.clone(),
            mapper.contract().facts.clone(),
            credentials.clone(),
        );
        let spec = HostSpec {
            install: &selected.install,
            plan: &plan,
            identity: selected.identity.as_deref(),
            credentials,
        };
        let bridge =
            HostBridge::spawn(spec, connection, BridgeOptions::default()).await.map_err(|e| {
                CoordinatorError::failed(
                    FailureKind::HostStart,
                    format!("cannot start the ZCode host: {e}"),
                )
            })?;
        tracing::info!(
            target: "zcode_acp::host",
            mapper = %selected.source,
            release = %selected.install.release_id,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "host started"
        );
        Ok(Host { bridge, mapper, facts: Arc::new(move || facts.read()) })
    }

    /// Discovery for starting something: the selected install or a clear error.
    pub async fn select(self: &Arc<Self>) -> Result<Selected, CoordinatorError> {
        let launcher = self.clone();
        let discovery = tokio::task::spawn_blocking(move || launcher.discover())
            .await
            .map_err(|e| CoordinatorError::failed(FailureKind::Discovery, e.to_string()))?
            .map_err(|e| CoordinatorError::failed(FailureKind::Mappers, e))?;
        selected_or_error(discovery)
    }
}

/// The coordinator starts hosts through this.
pub struct SessionHosts(pub Arc<Launcher>);

impl HostLauncher for SessionHosts {
    fn launch(&self) -> BoxFuture<'static, Result<Host, CoordinatorError>> {
        let launcher = self.0.clone();
        Box::pin(async move {
            let selected = launcher.select().await?;
            launcher.start(&selected).await
        })
    }

    fn offers(&self) -> Vec<String> {
        self.0.offers()
    }
}

impl Launcher {
    /// What `initialize` advertises beyond the baseline. Known only for `--simulate`: the
    /// simulated release names its mapper through the embedded contracts (JSON built into the
    /// binary; nothing is loaded, laid out or hashed). A real install is not known before
    /// discovery, which hashes files and runs ZCode's version probe, so nothing optional is
    /// advertised for it; a request is still served when its mapper offers the method.
    pub fn offers(&self) -> Vec<String> {
        if !self.target.simulate {
            return Vec::new();
        }
        let version =
            self.target.simulate_version.as_deref().unwrap_or(install::DEFAULT_SIMULATED_VERSION);
        let Some(release) = zcode_sim::simulated_release(version) else { return Vec::new() };
        let kind = match release.kind {
            zcode_sim::InstallKind::Desktop => zcode_contract::LayoutKind::Desktop,
            zcode_sim::InstallKind::Runtime => zcode_contract::LayoutKind::Runtime,
        };
        crate::mappers::embedded_contracts()
            .into_iter()
            .find(|contract| {
                contract
                    .releases
                    .iter()
                    .any(|r| r.simulated && r.kind == kind && r.app_version == release.app_version)
            })
            .map(|contract| contract.offers)
            .unwrap_or_default()
    }
}

/// The selected install, or a compatibility error that says what was found and expected.
pub fn selected_or_error(discovery: Discovery) -> Result<Selected, CoordinatorError> {
    let expected: Vec<_> = discovery
        .mappers
        .iter()
        .map(|m| {
            let releases: Vec<_> = m
                .releases
                .iter()
                .map(|r| json!({ "id": r.id, "appVersion": r.app_version, "cliVersion": r.cli_version }))
                .collect();
            json!({ "mapper": m.source, "protocol": m.protocol_id, "releases": releases })
        })
        .collect();
    let detected = discovery.inspection.as_ref().and_then(|inspection| {
        let findings = &inspection.verdicts.iter().find(|v| v.findings.files.is_some())?.findings;
        Some(json!({
            "installRoot": inspection.install_root,
            "appVersion": findings.app_version,
            "cliVersion": findings.cli_version,
            "platform": findings.metadata_platform,
        }))
    });
    let platform = discovery.platform.tag();
    discovery.into_selected().map_err(|error| CoordinatorError::Compatibility {
        message: format!("No usable ZCode install: {error}"),
        data: json!({ "platform": platform, "detected": detected, "expected": expected }),
    })
}
