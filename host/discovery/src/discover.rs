//! Discovery end to end: resolve the root and the Node, apply every contract, select one mapper.

use std::path::PathBuf;

use zcode_contract::Platform;

use crate::inspect::{Inspector, InstallTarget, MapperContract};
use crate::node::{NodeCandidate, resolve_explicit_node};
use crate::root::{
    Candidate, InstallRoot, RootError, Search, default_candidates, resolve_install_root,
};
use crate::select::{Selected, SelectionError, select};
use crate::verdict::{Inspection, ReleaseExpectation};

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
    pub releases: Vec<ReleaseExpectation>,
}

/// Everything discovery learnt, for a session start or a doctor report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discovery {
    pub platform: Platform,
    /// Where ZCode installs itself on this OS, in the order tried (empty on an unsupported OS).
    pub candidates: Vec<Candidate>,
    pub root: Result<InstallRoot, RootError>,
    /// The Node the user named, or why it cannot be used (`None`: none named).
    pub explicit_node: Option<Result<NodeCandidate, String>>,
    /// Present when the root resolved.
    pub inspection: Option<Inspection>,
    /// Present when the root resolved.
    pub selection: Option<Result<Selected, SelectionError>>,
    pub mappers: Vec<MapperSummary>,
}

impl Discovery {
    /// Resolves the root (`--zcode-install`, `ZCODE_ACP_ZCODE_INSTALL`, then the places ZCode
    /// installs itself) and the Node the user named, and applies every mapper's contract.
    pub fn run(
        search: &Search<'_>,
        inspector: &Inspector<'_>,
        mappers: &[MapperContract<'_>],
    ) -> Self {
        let platform = inspector.platform.clone();
        let root = resolve_install_root(search, &platform);
        let explicit_node = resolve_explicit_node(search.node_flag, search.env);
        let inspection = root.as_ref().ok().map(|root| {
            let target = InstallTarget {
                root: root.path.clone(),
                explicit_node: explicit_node.clone(),
                given_nodes: root.given_nodes.clone(),
                home: search.home.map(PathBuf::from),
            };
            inspector.inspect(&target, mappers)
        });
        let selection = inspection.as_ref().map(select);
        Self {
            candidates: platform.os.map(|os| default_candidates(os, search)).unwrap_or_default(),
            platform,
            root,
            explicit_node,
            inspection,
            selection,
            mappers: mappers
                .iter()
                .map(|m| MapperSummary {
                    source: m.source.to_string(),
                    protocol_id: m.contract.protocol_id.clone(),
                    credentials_file: m.contract.credentials_file.clone(),
                    releases: ReleaseExpectation::of(m.contract),
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
    search: &Search<'_>,
    inspector: &Inspector<'_>,
    mappers: &[MapperContract<'_>],
) -> Result<Selected, DiscoveryError> {
    Discovery::run(search, inspector, mappers).into_selected()
}
