//! Credentials filled into native writes by the core.
//!
//! Some native replies must carry a secret (a provider API key the host asks for before a model
//! request). The mapper builds the reply with a placeholder and names a `credential-source` of
//! its contract; [`CredentialStore::fill`] reads the value where the source says ZCode keeps it
//! and puts it in place of the placeholder. If the value is absent or unreadable, the mapper's
//! fallback (a refusal the native side understands) is written instead: a missing credential
//! never becomes silence, and never a guess.
//!
//! Values are never logged, never returned to a mapper, never kept: each fill reads the file
//! again, so a sign-in or sign-out takes effect at once.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use zcode_contract::{CredentialSource, NativeWrite, Presence, SecretFill};

mod facts;
mod protected;

pub use facts::SessionFacts;

use protected::{Machine, decode};

const LOG: &str = "zcode_acp::credentials";

/// A write the mapper got wrong; the credential store never writes it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FillError {
    #[error(
        "write `{label}` names credential source `{source_name}`, which the contract does not declare"
    )]
    UnknownSource { label: String, source_name: String },
    #[error("write `{label}` must contain its placeholder exactly once (found {count})")]
    Placeholder { label: String, count: usize },
}

/// Reads the credential sources of one mapper's contract under one home directory.
#[derive(Clone, Debug, Default)]
pub struct CredentialStore {
    home: PathBuf,
    sources: Vec<CredentialSource>,
}

impl CredentialStore {
    pub fn new(home: impl Into<PathBuf>, sources: Vec<CredentialSource>) -> Self {
        Self { home: home.into(), sources }
    }

    /// The bytes to write for `write`: as given, with the credential filled in, or the fallback.
    pub fn fill(&self, write: &NativeWrite) -> Result<Vec<u8>, FillError> {
        let Some(fill) = &write.secret else { return Ok(write.bytes.clone()) };
        let count = occurrences(&write.bytes, fill.placeholder.as_bytes());
        if fill.placeholder.is_empty() || count != 1 {
            return Err(FillError::Placeholder { label: write.label.clone(), count });
        }
        let source = self.sources.iter().find(|s| s.name == fill.source).ok_or_else(|| {
            FillError::UnknownSource {
                label: write.label.clone(),
                source_name: fill.source.clone(),
            }
        })?;
        match self.read(source, fill) {
            Ok(value) => {
                tracing::debug!(target: LOG, write = %write.label, source = %source.name, "credential filled");
                Ok(replace(
                    &write.bytes,
                    fill.placeholder.as_bytes(),
                    json_escaped(&value).as_bytes(),
                ))
            }
            Err(why) => {
                tracing::info!(target: LOG, write = %write.label, source = %source.name, %why, "credential unavailable; the mapper's refusal is written");
                Ok(fill.fallback.clone())
            }
        }
    }

    /// Whether `source` holds a readable credential for `args`, for a mapper's
    /// `credential-presence` fact: the same lookups and decoders as a fill, and the value
    /// dropped at once. An unknown source is absent.
    pub fn presence(&self, source: &str, args: &[(String, String)]) -> Presence {
        let Some(source) = self.sources.iter().find(|s| s.name == source) else {
            return Presence::Absent;
        };
        let fill = SecretFill {
            placeholder: String::new(),
            source: source.name.clone(),
            args: args.to_vec(),
            fallback: Vec::new(),
        };
        match self.read(source, &fill) {
            Ok(_) => Presence::Present,
            Err(Unavailable::NoFile | Unavailable::Missing) => Presence::Absent,
            Err(Unavailable::Protected(prefix)) => {
                Presence::Unreadable(prefix.trim_end_matches(':').to_string())
            }
            Err(why) => Presence::Unreadable(why.to_string()),
        }
    }

    /// The credential's value, or why it cannot be had (without the value or the key).
    fn read(&self, source: &CredentialSource, fill: &SecretFill) -> Result<String, Unavailable> {
        let entries = self.entries(&source.file)?;
        let machine = Machine::current(&self.home.to_string_lossy());
        let mut args: Vec<(String, String)> = fill.args.clone();
        for lookup in &source.lookups {
            if args.iter().any(|(name, _)| *name == lookup.name) {
                continue;
            }
            let key = expand(&lookup.key, &args)?;
            let text = decode(entry(&entries, &key)?, &source.encodings, &machine)?;
            let object: Map<String, Value> =
                serde_json::from_str(&text).map_err(|_| Unavailable::Malformed)?;
            let value =
                object.get(&lookup.field).and_then(Value::as_str).ok_or(Unavailable::Missing)?;
            args.push((lookup.name.clone(), value.to_string()));
        }
        let key = expand(&source.key, &args)?;
        let value = decode(entry(&entries, &key)?, &source.encodings, &machine)?;
        if value.is_empty() {
            return Err(Unavailable::Missing);
        }
        Ok(value)
    }

    fn entries(&self, file: &str) -> Result<Map<String, Value>, Unavailable> {
        if Path::new(file).is_absolute() || file.split(['/', '\\']).any(|part| part == "..") {
            return Err(Unavailable::Malformed);
        }
        let text =
            std::fs::read_to_string(self.home.join(file)).map_err(|_| Unavailable::NoFile)?;
        serde_json::from_str(&text).map_err(|_| Unavailable::Malformed)
    }
}

/// Why a credential could not be read. Says nothing about the value or the key.
#[derive(Debug, thiserror::Error)]
enum Unavailable {
    #[error("the credentials file is absent")]
    NoFile,
    #[error("the credential is not stored")]
    Missing,
    #[error("the credentials file or entry is malformed")]
    Malformed,
    #[error(
        "the credential is stored in a form the contract does not allow or the core cannot read"
    )]
    Encoding,
    #[error("the credential is stored as `{0}`, a form the core cannot read")]
    Protected(String),
    #[error("the credential does not decrypt with this machine's key")]
    Undecryptable,
    #[error("the credential key names an unknown placeholder")]
    Placeholder,
}

fn entry<'e>(entries: &'e Map<String, Value>, key: &str) -> Result<&'e str, Unavailable> {
    entries
        .get(key)
        .map(|v| v.as_str().ok_or(Unavailable::Malformed))
        .ok_or(Unavailable::Missing)?
}

/// `{name}` placeholders of a key template, from `args`.
fn expand(template: &str, args: &[(String, String)]) -> Result<String, Unavailable> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..].find('}').ok_or(Unavailable::Placeholder)? + open;
        let name = &rest[open + 1..close];
        let value = args.iter().find(|(n, _)| n == name).ok_or(Unavailable::Placeholder)?;
        out.push_str(&value.1);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The value as the inside of a JSON string.
fn json_escaped(value: &str) -> String {
    let quoted = Value::String(value.to_string()).to_string();
    quoted[1..quoted.len() - 1].to_string()
}

fn occurrences(haystack: &[u8], needle: &[u8]) -> usize {
    if needle.is_empty() || haystack.len() < needle.len() {
        return 0;
    }
    haystack.windows(needle.len()).filter(|window| *window == needle).count()
}

fn replace(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let at = haystack.windows(needle.len()).position(|w| w == needle).expect("counted once");
    let mut out = Vec::with_capacity(haystack.len() + with.len());
    out.extend_from_slice(&haystack[..at]);
    out.extend_from_slice(with);
    out.extend_from_slice(&haystack[at + needle.len()..]);
    out
}

#[cfg(test)]
mod tests;
