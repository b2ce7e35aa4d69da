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
    /// Largest accepted `session/prompt` (serialized), below the native 16 MiB frame cap.
    pub max_prompt_bytes: usize,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        Self {
            client: ClientFeatures::default(),
            interaction_timeout: Duration::from_secs(30 * 60),
            cancel_grace: Duration::from_secs(30),
            max_prompt_bytes: 12 * 1024 * 1024,
        }
    }
}
