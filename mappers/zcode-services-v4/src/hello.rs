//! The text hello each way before the binary phase (ZCode `packages/server/src/entry-stdio.ts`
//! @ 3.15.1): the Server writes one line `{"type":"zcode-hello","version","platform","arch",
//! "pid"}` and waits (10 s) for one line `{"type":"zcode-hello-ack","version","clientId"}`
//! (`helloAckMessageSchema`: `clientId` non-empty). Bytes after the Server's newline already
//! belong to the binary phase.

use serde_json::{Value, json};
use zcode_contract::MapperError;

use zcode_mapper_sdk::json::protocol;
use zcode_v4::schema::Fields;

/// The plugin's bound on the hello line (V4S §2.3).
pub const MAX_HELLO: usize = 64 * 1024;
pub use zcode_v4::command::CLIENT_ID;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    /// `ZCODE_VERSION` of the Server, e.g. `3.14.3`: the release identity.
    pub version: String,
    pub platform: String,
    pub arch: String,
    pub pid: u64,
}

/// Parses the hello line (without its newline).
pub fn parse(line: &[u8]) -> Result<Hello, MapperError> {
    let line = std::str::from_utf8(line)
        .map_err(|_| protocol("The Services Server hello is not UTF-8"))?;
    let value: Value = serde_json::from_str(line.trim())
        .map_err(|_| protocol("The Services Server did not start with its JSON hello line"))?;
    let fields = Fields::native(&value, "Services Server hello")?;
    fields.only(&["type", "version", "platform", "arch", "pid"])?;
    if fields.str("type")? != "zcode-hello" {
        return Err(protocol("Services Server hello: `type` is not `zcode-hello`"));
    }
    Ok(Hello {
        version: fields.non_empty_str("version")?.to_string(),
        platform: fields.str("platform")?.to_string(),
        arch: fields.str("arch")?.to_string(),
        pid: fields.u64("pid")?,
    })
}

/// The acknowledgement line (with its newline).
pub fn ack() -> Vec<u8> {
    let ack = json!({"type": "zcode-hello-ack", "version": env!("CARGO_PKG_VERSION"), "clientId": CLIENT_ID});
    format!("{ack}\n").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_servers_hello() {
        let hello = parse(br#"{"type":"zcode-hello","version":"3.14.3","platform":"darwin","arch":"arm64","pid":12345}"#)
            .unwrap();
        assert_eq!(hello.version, "3.14.3");
        assert_eq!(
            (hello.platform.as_str(), hello.arch.as_str(), hello.pid),
            ("darwin", "arm64", 12345)
        );
    }

    #[test]
    fn refuses_anything_else() {
        let message = |line: &[u8]| parse(line).unwrap_err().message;
        assert_eq!(
            message(b"Welcome!"),
            "The Services Server did not start with its JSON hello line"
        );
        assert_eq!(
            message(br#"{"type":"wrong"}"#),
            "Services Server hello: `type` is not `zcode-hello`"
        );
        assert_eq!(
            message(br#"{"type":"zcode-hello","version":"1","platform":"x","arch":"y","pid":1,"extra":1}"#),
            "Services Server hello: unknown field `extra`"
        );
        assert_eq!(
            message(br#"{"type":"zcode-hello","version":"","platform":"x","arch":"y","pid":1}"#),
            "Services Server hello: field `version` must not be empty"
        );
        assert_eq!(message(&[0xff]), "The Services Server hello is not UTF-8");
    }

    #[test]
    fn acknowledges_with_a_client_id() {
        let ack = ack();
        assert_eq!(ack.last(), Some(&b'\n'));
        let value: Value = serde_json::from_slice(&ack).unwrap();
        assert_eq!(value["type"], "zcode-hello-ack");
        assert_eq!(value["clientId"], "zcode-acp");
        assert!(value["version"].is_string());
    }
}
