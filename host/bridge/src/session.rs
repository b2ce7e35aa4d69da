//! A mapper session bound to one host bridge.

use std::sync::{Arc, Mutex};

use zcode_contract::{Action, MapperFault, MapperSession};

use crate::shared::{LinkId, Shared, lock};

/// What the bridge routes to one session, in arrival order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionInbound {
    /// A native event for a route the session owns: hand it to [`SessionLink::map_event`].
    Event(String),
    /// The transport failed closed (or is shutting down); nothing more will arrive.
    TransportClosed(String),
}

/// A mapper session linked to a bridge. Clones share the session; when the last clone is
/// dropped the session's routes are removed and its events are no longer delivered.
#[derive(Clone)]
pub struct SessionLink {
    pub(crate) inner: Arc<LinkInner>,
}

pub(crate) struct LinkInner {
    pub(crate) id: LinkId,
    pub(crate) shared: Arc<Shared>,
    pub(crate) session: Mutex<Box<dyn MapperSession>>,
    /// Set by the first mapper fault; the session is unusable from then on.
    fault: Mutex<Option<MapperFault>>,
}

impl SessionLink {
    pub(crate) fn new(id: LinkId, shared: Arc<Shared>, session: Box<dyn MapperSession>) -> Self {
        let inner = LinkInner { id, shared, session: Mutex::new(session), fault: Mutex::new(None) };
        Self { inner: Arc::new(inner) }
    }

    /// Maps one event payload received from [`SessionInbound::Event`]. After a mapper fault the
    /// session is unusable and every call returns that fault.
    pub fn map_event(&self, payload: &str) -> Result<Vec<Action>, MapperFault> {
        self.check_usable()?;
        let result = lock(&self.inner.session).map_event(payload);
        if let Err(fault) = &result {
            self.poison(fault.clone());
        }
        result
    }

    /// The fault that made this session unusable, if any.
    pub fn fault(&self) -> Option<MapperFault> {
        lock(&self.inner.fault).clone()
    }

    pub(crate) fn check_usable(&self) -> Result<(), MapperFault> {
        match self.fault() {
            Some(fault) => Err(fault),
            None => Ok(()),
        }
    }

    pub(crate) fn poison(&self, fault: MapperFault) {
        tracing::warn!(fault = %fault, "mapper session failed; it is unusable from now on");
        lock(&self.inner.fault).get_or_insert(fault);
    }
}

impl Drop for LinkInner {
    fn drop(&mut self) {
        self.shared.remove_session(self.id);
    }
}
