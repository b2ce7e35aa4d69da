//! Stored credential forms: a value in the clear, AES-256-GCM as ZCode writes it, or a form the
//! core cannot read. Which form a value is in is decided by its prefix, never guessed.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use zcode_contract::{AesGcmEncoding, CredentialEncoding};

use crate::Unavailable;

/// What the key of an `aes-gcm` form is derived from when its variable is unset.
pub(crate) struct Machine {
    /// Node's `process.platform`: `darwin`, `linux`, `win32`.
    pub platform: String,
    pub home: String,
    pub user: String,
}

impl Machine {
    pub fn current(home: &str) -> Self {
        Self {
            platform: zcode_contract::Platform::current().node_os,
            home: home.to_string(),
            // ZCode's seed names the user "unknown" when the OS has no name for it.
            user: account_name()
                .filter(|name| !name.is_empty())
                .unwrap_or_else(|| "unknown".into()),
        }
    }
}

/// The value in the clear, by the first form whose prefix it starts with.
pub(crate) fn decode(
    stored: &str,
    encodings: &[CredentialEncoding],
    machine: &Machine,
) -> Result<String, Unavailable> {
    for encoding in encodings {
        match encoding {
            CredentialEncoding::AesGcm(form) if stored.starts_with(&form.prefix) => {
                return decrypt(&stored[form.prefix.len()..], form, machine);
            }
            CredentialEncoding::Unreadable(prefix) if stored.starts_with(prefix.as_str()) => {
                return Err(Unavailable::Protected(prefix.clone()));
            }
            _ => {}
        }
    }
    if encodings.contains(&CredentialEncoding::Plain) {
        Ok(stored.to_string())
    } else {
        Err(Unavailable::Encoding)
    }
}

fn decrypt(body: &str, form: &AesGcmEncoding, machine: &Machine) -> Result<String, Unavailable> {
    let parts: Vec<&str> = body.split('.').collect();
    let [iv, tag, data] = parts[..] else { return Err(Unavailable::Malformed) };
    let part = |text: &str| {
        URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).map_err(|_| Unavailable::Malformed)
    };
    let (iv, tag, mut data) = (part(iv)?, part(tag)?, part(data)?);
    if iv.len() != 12 || tag.len() != 16 {
        return Err(Unavailable::Malformed);
    }
    let cipher = Aes256Gcm::new_from_slice(&key(form, machine)).expect("a SHA-256 is 32 bytes");
    // The AEAD API takes ciphertext and tag together.
    data.extend_from_slice(&tag);
    let clear = cipher
        .decrypt(Nonce::from_slice(&iv), data.as_slice())
        .map_err(|_| Unavailable::Undecryptable)?;
    String::from_utf8(clear).map_err(|_| Unavailable::Malformed)
}

fn key(form: &AesGcmEncoding, machine: &Machine) -> [u8; 32] {
    // The variable counts trimmed, and only when something is left (as ZCode reads it).
    let secret = std::env::var(&form.key_env)
        .ok()
        .map(|value| value.trim().to_string())
        .filter(|value| !value.is_empty());
    let seed = secret.unwrap_or_else(|| {
        form.fallback_seed
            .replace("{platform}", &machine.platform)
            .replace("{home}", &machine.home)
            .replace("{user}", &machine.user)
    });
    Sha256::digest(seed.as_bytes()).into()
}

/// The account name of this process's user, as the OS records it.
#[cfg(unix)]
fn account_name() -> Option<String> {
    // SAFETY: getpwuid_r writes only into the buffers given; the name is copied out before they
    // go away.
    unsafe {
        let mut record: libc::passwd = std::mem::zeroed();
        let mut buffer = vec![0 as libc::c_char; 4096];
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let status = libc::getpwuid_r(
            libc::geteuid(),
            &mut record,
            buffer.as_mut_ptr(),
            buffer.len(),
            &mut found,
        );
        if status != 0 || found.is_null() || record.pw_name.is_null() {
            return None;
        }
        Some(std::ffi::CStr::from_ptr(record.pw_name).to_string_lossy().into_owned())
    }
}

#[cfg(not(unix))]
fn account_name() -> Option<String> {
    std::env::var("USERNAME").ok()
}
