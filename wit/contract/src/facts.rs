//! Non-secret facts the core reads for a mapper (WIT 0.4 `fact-source`, `fact-value`).

use serde::{Deserialize, Serialize};

/// Largest JSON a fact may hold, and largest data file or user file the core parses.
pub const MAX_FACT_BYTES: usize = 256 * 1024;
pub const MAX_FACT_FILE_BYTES: u64 = 1024 * 1024;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataFile {
    pub role: String,
    pub path: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactSource {
    pub name: String,
    pub kind: FactKind,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FactKind {
    InstallJson(JsonFact),
    InstallPath(String),
    UserJson(JsonFact),
    CredentialPresence(PresenceFact),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JsonFact {
    pub file: String,
    pub pointer: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PresenceFact {
    pub source: String,
    pub args: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Presence {
    Present,
    Absent,
    Unreadable(String),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FactValue {
    Json(String),
    Presence(Presence),
}

/// Facts by name, in the contract's order.
pub type Facts = Vec<(String, FactValue)>;

/// The value of fact `name`, if handed over.
pub fn fact<'f>(facts: &'f [(String, FactValue)], name: &str) -> Option<&'f FactValue> {
    facts.iter().find(|(n, _)| n == name).map(|(_, value)| value)
}

impl FactKind {
    /// Read when the install is verified (else for each session).
    pub fn is_install(&self) -> bool {
        matches!(self, FactKind::InstallJson(_) | FactKind::InstallPath(_))
    }
}
