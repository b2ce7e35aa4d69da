//! Tunables of one host bridge.

use std::time::Duration;

/// Limits and grace periods of one host bridge. `Default` gives the production values.
#[derive(Clone, Debug)]
pub struct BridgeOptions {
    /// Upper bound on any mapper-given request timeout.
    pub max_timeout: Duration,
    /// Bytes of host stdout handed to the mapper without any frame completing before the
    /// transport fails closed; guards against a mapper that buffers forever.
    pub stdout_buffer_cap: usize,
    /// How long the child may take to exit after its stdin is closed.
    pub exit_grace: Duration,
    /// How long the process group may take to exit after SIGTERM, before SIGKILL.
    pub term_grace: Duration,
    /// How long to wait for the connection to report `Ready` when the plan needs a handshake.
    pub handshake_timeout: Duration,
}

/// The largest native frame a mapper is expected to accept, plus slack for the bytes of a
/// following frame that arrive in the same read. 64 MiB, the longest native line a mapper
/// reads: a real host answers a resumed session's whole history in one line, 26 MB in a
/// published live record (issue 25 [B], `docs/reliability.md` F-34); 16 MiB failed such a
/// load. Mappers with smaller frames refuse theirs themselves, earlier.
const DEFAULT_STDOUT_BUFFER_CAP: usize = 64 * 1024 * 1024 + 256 * 1024;

impl Default for BridgeOptions {
    fn default() -> Self {
        Self {
            max_timeout: Duration::from_secs(10 * 60),
            stdout_buffer_cap: DEFAULT_STDOUT_BUFFER_CAP,
            exit_grace: Duration::from_secs(4),
            term_grace: Duration::from_secs(2),
            handshake_timeout: Duration::from_secs(30),
        }
    }
}

impl BridgeOptions {
    /// The timeout the bridge enforces for an awaited request: the mapper's, capped at
    /// `max_timeout`. (A zero timeout means no reply is awaited; see the driver.)
    pub(crate) fn request_timeout(&self, timeout_ms: u32) -> Duration {
        Duration::from_millis(u64::from(timeout_ms)).min(self.max_timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_values_are_capped() {
        let options =
            BridgeOptions { max_timeout: Duration::from_secs(60), ..BridgeOptions::default() };
        assert_eq!(options.request_timeout(1500), Duration::from_millis(1500));
        assert_eq!(options.request_timeout(u32::MAX), Duration::from_secs(60));
    }
}
