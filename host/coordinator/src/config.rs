//! Knobs of the coordinator, with the defaults a user of a real ZCode would expect.

use std::time::Duration;

use zcode_contract::ClientFeatures;

#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    /// What the client declared at `initialize`.
    pub client: ClientFeatures,
    /// How long a permission or elicitation may wait for the user before it is refused.
    pub interaction_timeout: Duration,
    /// How long the host may take to end a turn after being asked to stop.
    pub cancel_grace: Duration,
    /// The size limit of one ACP message, either way: a `session/prompt` (serialized, with its
    /// embedded resources), and an update, a permission question or a form the agent sends (a
    /// tool output, a diff, a replayed message). Well below the mappers' 16 MiB native frames,
    /// so a history or a tool call that repeats such content still fits in one.
    pub max_message_bytes: usize,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        Self {
            client: ClientFeatures::default(),
            interaction_timeout: Duration::from_secs(30 * 60),
            cancel_grace: Duration::from_secs(30),
            max_message_bytes: 4 * 1024 * 1024,
        }
    }
}
