//! Discovery end to end: resolve the root, apply every contract, select one mapper.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use zcode_contract::Platform;

use crate::inspect::{Inspector, MapperContract};
use crate::root::{InstallRoot, RootError, default_roots, resolve_install_root};
use crate::select::{Selected, SelectionError, select};
use crate::verdict::{ArtifactExpectation, Inspection};

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryError {
    #[error(transparent)]
    Root(#[from] RootError),
    #[error(transparent)]
    Selection(#[from] SelectionError),
}

/// A mapper as reports list it, independent of any install.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapperSummary {
    pub source: String,
    pub protocol_id: String,
    pub credentials_file: String,
    pub expects: Vec<ArtifactExpectation>,
}

/// Everything discovery learnt, for a session start or a doctor report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discovery {
    pub platform: Platform,
    /// Where ZCode installs itself on this OS (empty on an unsupported OS).
    pub os_defaults: Vec<PathBuf>,
    pub root: Result<InstallRoot, RootError>,
    /// Present when the root resolved.
    pub inspection: Option<Inspection>,
    /// Present when the root resolved.
    pub selection: Option<Result<Selected, SelectionError>>,
    pub mappers: Vec<MapperSummary>,
}

impl Discovery {
    /// Resolves the root (`flag`, then `ZCODE_ACP_ZCODE_INSTALL` via `env`, then the OS
    /// default) and applies every mapper's contract to it.
    pub fn run(
        flag: Option<&Path>,
        env: &dyn Fn(&str) -> Option<OsString>,
        inspector: &Inspector<'_>,
        mappers: &[MapperContract<'_>],
    ) -> Self {
        let platform = inspector.platform.clone();
        let root = resolve_install_root(flag, &platform, env);
        let inspection = root.as_ref().ok().map(|root| inspector.inspect(&root.path, mappers));
        let selection = inspection.as_ref().map(select);
        Self {
            os_defaults: platform.os.map(|os| default_roots(os, env)).unwrap_or_default(),
            platform,
            root,
            inspection,
            selection,
            mappers: mappers
                .iter()
                .map(|m| MapperSummary {
                    source: m.source.to_string(),
                    protocol_id: m.contract.protocol_id.clone(),
                    credentials_file: m.contract.credentials_file.clone(),
                    expects: ArtifactExpectation::of(m.contract),
                })
                .collect(),
        }
    }

    pub fn selected(&self) -> Option<&Selected> {
        self.selection.as_ref().and_then(|s| s.as_ref().ok())
    }

    /// The selected install, or why there is none.
    pub fn into_selected(self) -> Result<Selected, DiscoveryError> {
        self.root?;
        let not_inspected =
            || Err(SelectionError::NoneAccepted("the install root was not inspected".to_string()));
        Ok(self.selection.unwrap_or_else(not_inspected)?)
    }
}

/// Discovery for a session: the verified install and the index of the mapper that drives it.
pub fn discover(
    flag: Option<&Path>,
    env: &dyn Fn(&str) -> Option<OsString>,
    inspector: &Inspector<'_>,
    mappers: &[MapperContract<'_>],
) -> Result<Selected, DiscoveryError> {
    Discovery::run(flag, env, inspector, mappers).into_selected()
}
