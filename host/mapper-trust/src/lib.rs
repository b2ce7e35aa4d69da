//! Which drop-in mapper files may be loaded.
//!
//! A mapper chooses the native program's arguments, environment and a script that ZCode's
//! runtime executes: loading one means running its code as the user. A drop-in `.wasm` is
//! loaded only after the user recorded its SHA-256 (`zcode-acp mapper trust <file>` or
//! `mapper install <file>`) in a user-only trust file ([`store`]); an untrusted or changed file
//! is listed with the command that trusts it, and never loaded ([`dropins`]). Embedded mappers
//! need no trust: they are part of the binary.

mod dropins;
mod store;

pub use dropins::{Admission, DropIn, MAX_MAPPER_FILE, read_capped, scan};
pub use store::{TRUST_FILE, TrustError, TrustState, TrustStore};

use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}
