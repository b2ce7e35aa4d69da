//! V4 attachment upload: what a prompt's image, audio or binary resource becomes before
//! `sendText` can reference it. One upload is `begin` (name, MIME type, size, chunk count and
//! the SHA-256 of the whole), then each chunk in order (at most 512 KiB decoded), then `commit`,
//! whose `ref` the `sendText` attachment names as `{ref, fileName, mime, bytes}`
//! (`../shared/reference/zcode-services-v4.md` §3.1 `attachmentBeginV4|ChunkV4|CommitV4` and
//! §4 prompt step 4–5). ZCode checks the checksum as `^sha256:[0-9a-f]{64}$` (lower-case hex
//! with the prefix; a client that sent bare hex had every upload refused, as its regression test
//! in public notes records). The limit per attachment is 20 MiB
//! ([`zcode_mapper_sdk::acp::prompt::ATTACHMENT_MAX_BYTES`]).
//!
//! The parameters here carry no workspace or session: the mapper that speaks a transport adds
//! its own (`workspacePath`, `sessionId` on the Services Server).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use zcode_contract::MapperError;
use zcode_mapper_sdk::json::{invalid_params, protocol};

/// The most bytes one chunk carries (decoded).
pub const CHUNK_BYTES: usize = 512 * 1024;

/// One attachment to upload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upload {
    pub file_name: String,
    pub mime: String,
    pub bytes: Vec<u8>,
}

impl Upload {
    /// An upload of base64 `data` (as ACP carries it); invalid base64 is invalid params.
    pub fn from_base64(file_name: String, mime: String, data: &str) -> Result<Self, MapperError> {
        let bytes = STANDARD.decode(data).map_err(|_| {
            invalid_params(format!("attachment {file_name}: data is not valid base64"))
        })?;
        Ok(Upload { file_name, mime, bytes })
    }

    pub fn total_chunks(&self) -> usize {
        self.bytes.len().div_ceil(CHUNK_BYTES)
    }

    /// `sha256:<lower-case hex>` of the whole attachment.
    pub fn checksum(&self) -> String {
        let digest = Sha256::digest(&self.bytes);
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("sha256:{hex}")
    }

    /// The parameters of `begin`.
    pub fn begin(&self, upload_id: &str) -> Value {
        json!({
            "uploadId": upload_id,
            "fileName": self.file_name,
            "mime": self.mime,
            "totalBytes": self.bytes.len(),
            "totalChunks": self.total_chunks(),
            "checksum": self.checksum(),
        })
    }

    /// The parameters of the `index`-th chunk.
    pub fn chunk(&self, upload_id: &str, index: usize) -> Value {
        let start = (index * CHUNK_BYTES).min(self.bytes.len());
        let end = (start + CHUNK_BYTES).min(self.bytes.len());
        json!({
            "uploadId": upload_id,
            "chunkIndex": index,
            "dataBase64": STANDARD.encode(&self.bytes[start..end]),
        })
    }

    /// The `sendText` attachment once committed as `reference`.
    pub fn attachment(&self, reference: &Value) -> Value {
        json!({"ref": reference, "fileName": self.file_name, "mime": self.mime, "bytes": self.bytes.len()})
    }
}

/// The index the next chunk must have, from `begin`'s answer: a fresh upload is `staging` at 0
/// (anything else, such as an upload ZCode says it already holds, is not what a new upload id
/// can get, and fails closed).
pub fn begun(answer: &Value, upload_id: &str) -> Result<(), MapperError> {
    let fresh = answer.get("uploadId").and_then(Value::as_str) == Some(upload_id)
        && answer.get("state").and_then(Value::as_str) == Some("staging")
        && answer.get("nextChunkIndex").and_then(Value::as_u64) == Some(0);
    if fresh {
        Ok(())
    } else {
        Err(protocol(format!("ZCode began the attachment upload unexpectedly: {answer}")))
    }
}

/// A chunk's answer must move to the next index.
pub fn chunked(answer: &Value, index: usize) -> Result<(), MapperError> {
    if answer.get("nextChunkIndex").and_then(Value::as_u64) == Some(index as u64 + 1) {
        Ok(())
    } else {
        Err(protocol(format!("ZCode took attachment chunk {index} unexpectedly: {answer}")))
    }
}

/// The `ref` of a committed upload.
pub fn committed(answer: &Value) -> Result<Value, MapperError> {
    match answer.get("ref") {
        Some(reference) if !reference.is_null() => Ok(reference.clone()),
        _ => Err(protocol(format!("ZCode committed the attachment without a ref: {answer}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_into_chunks_of_512_kib_with_the_checksum_of_the_whole() {
        let upload = Upload {
            file_name: "a.bin".into(),
            mime: "application/octet-stream".into(),
            bytes: vec![7; CHUNK_BYTES * 2 + 1],
        };
        let begin = upload.begin("u1");
        assert_eq!(begin["totalChunks"], 3);
        assert_eq!(begin["totalBytes"], CHUNK_BYTES * 2 + 1);
        let checksum = begin["checksum"].as_str().unwrap();
        assert!(checksum.starts_with("sha256:") && checksum.len() == 7 + 64, "{checksum}");
        assert!(checksum[7..].chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)));
        let sizes: Vec<usize> = (0..3)
            .map(|i| {
                STANDARD
                    .decode(upload.chunk("u1", i)["dataBase64"].as_str().unwrap())
                    .unwrap()
                    .len()
            })
            .collect();
        assert_eq!(sizes, [CHUNK_BYTES, CHUNK_BYTES, 1]);
        assert_eq!(
            upload.attachment(&json!("att_1")),
            json!({"ref": "att_1", "fileName": "a.bin", "mime": "application/octet-stream", "bytes": CHUNK_BYTES * 2 + 1})
        );
        let empty = Upload::from_base64("e".into(), "text/plain".into(), "").unwrap();
        assert_eq!(
            empty.checksum(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(Upload::from_base64("x".into(), "y".into(), "%%").is_err());
    }

    #[test]
    fn checks_each_answer() {
        assert!(
            begun(&json!({"uploadId": "u", "state": "staging", "nextChunkIndex": 0}), "u").is_ok()
        );
        assert!(
            begun(
                &json!({"uploadId": "u", "state": "committed", "nextChunkIndex": 0, "ref": "r"}),
                "u"
            )
            .is_err()
        );
        assert!(
            begun(&json!({"uploadId": "v", "state": "staging", "nextChunkIndex": 0}), "u").is_err()
        );
        assert!(chunked(&json!({"uploadId": "u", "nextChunkIndex": 2}), 1).is_ok());
        assert!(chunked(&json!({"uploadId": "u", "nextChunkIndex": 1}), 1).is_err());
        assert_eq!(committed(&json!({"ref": "r"})).unwrap(), json!("r"));
        assert!(committed(&json!({})).is_err());
    }
}
