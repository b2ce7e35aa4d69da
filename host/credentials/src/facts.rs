//! The facts a mapper's contract declares, as handed to each new session (WIT 0.4
//! `session-init.facts`): the install's as verified, JSON values of the user's non-credential
//! files, and presence verdicts of credentials. Read again for each session, read-only; no
//! credential value is ever part of a fact (the contract check keeps `user-json` facts off
//! every credentials file, and a presence is only `present`, `absent` or `unreadable`).

use std::path::PathBuf;

use serde_json::Value;
use zcode_contract::{FactKind, FactSource, FactValue, Facts, MAX_FACT_BYTES, MAX_FACT_FILE_BYTES};

use crate::{CredentialStore, LOG};

#[derive(Clone, Debug, Default)]
pub struct SessionFacts {
    home: PathBuf,
    install: Facts,
    sources: Vec<FactSource>,
    store: CredentialStore,
}

impl SessionFacts {
    /// `install`: the verified install's facts; `sources`: the contract's facts.
    pub fn new(
        home: impl Into<PathBuf>,
        install: Facts,
        sources: Vec<FactSource>,
        store: CredentialStore,
    ) -> Self {
        Self { home: home.into(), install, sources, store }
    }

    /// Every fact of the contract, in its order, as the files are now.
    pub fn read(&self) -> Facts {
        self.sources
            .iter()
            .map(|fact| {
                let value = match &fact.kind {
                    FactKind::InstallJson(_) | FactKind::InstallPath(_) => self
                        .install
                        .iter()
                        .find(|(name, _)| *name == fact.name)
                        .map(|(_, value)| value.clone())
                        .unwrap_or_else(|| FactValue::Json("null".into())),
                    FactKind::UserJson(json) => {
                        FactValue::Json(self.user_json(&json.file, &json.pointer, &fact.name))
                    }
                    FactKind::CredentialPresence(presence) => {
                        FactValue::Presence(self.store.presence(&presence.source, &presence.args))
                    }
                };
                (fact.name.clone(), value)
            })
            .collect()
    }

    /// The value at `pointer` of a JSON file under the home; `null` when the file or value is
    /// missing, unreadable, over 1 MiB, or the value over 256 KiB.
    fn user_json(&self, file: &str, pointer: &str, name: &str) -> String {
        let path = self.home.join(file);
        let read = || -> Option<Value> {
            if std::fs::metadata(&path).ok()?.len() > MAX_FACT_FILE_BYTES {
                tracing::info!(target: LOG, fact = %name, "user file over 1 MiB; the fact is null");
                return None;
            }
            let document: Value = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
            document.pointer(pointer).cloned()
        };
        let text = read().unwrap_or(Value::Null).to_string();
        if text.len() > MAX_FACT_BYTES {
            tracing::info!(target: LOG, fact = %name, "user fact over 256 KiB; it is null");
            return "null".into();
        }
        text
    }
}
