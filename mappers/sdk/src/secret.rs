//! Credentials the core writes for a mapper, which never sees them: a write whose bytes hold a
//! placeholder, and the credential source whose value replaces it (inside a JSON string,
//! exactly once, escaped). Logs and traces never hold the value.

use zcode_contract::{NativeWrite, SecretFill};

/// Credential source `source` in place of `placeholder`; without a value the core writes
/// `fallback` instead of the write's bytes.
pub fn fill(placeholder: &str, source: &str, fallback: Vec<u8>) -> SecretFill {
    SecretFill {
        placeholder: placeholder.to_string(),
        source: source.to_string(),
        args: Vec::new(),
        fallback,
    }
}

/// `bytes`, named `label` in logs, written with `fill` applied.
pub fn write(label: &str, bytes: Vec<u8>, fill: SecretFill) -> NativeWrite {
    NativeWrite { secret: Some(fill), ..NativeWrite::new(label, bytes) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_with_a_fill() {
        let fill = fill("@@T@@", "token", b"{}\n".to_vec());
        let write = write("auth", b"{\"t\":\"@@T@@\"}\n".to_vec(), fill);
        assert_eq!((write.label.as_str(), write.bytes), ("auth", b"{\"t\":\"@@T@@\"}\n".to_vec()));
        let secret = write.secret.unwrap();
        assert_eq!((secret.placeholder.as_str(), secret.source.as_str()), ("@@T@@", "token"));
        assert_eq!((secret.args.len(), secret.fallback), (0, b"{}\n".to_vec()));
    }
}
