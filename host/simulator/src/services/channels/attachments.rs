//! `zcode-agent.attachmentBeginV4|ChunkV4|CommitV4|AbortV4`: V4 attachment upload as the
//! Services Server takes it (`../shared/reference/zcode-services-v4.md` §3.1), and the check
//! that a `sendText` names only committed uploads, exactly as committed. The simulator checks
//! that each attachment arrived whole: the declared size and chunk count, chunks in order of at
//! most 512 KiB, the `sha256:<hex>` checksum (ZCode's `^sha256:[0-9a-f]{64}$`) over the joined
//! bytes, the MIME type against the bytes' signature (`common::attachments`), and a name. An
//! upload over 20 MiB is refused at `begin`.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use serde_json::{Map, Value, json};

use super::{CallResult, RpcError, object_arg, string_field, workspace};
use crate::common::attachments::{check_bytes, decode, sha256_hex};
use crate::services::server::Server;

pub const METHODS: &[&str] =
    &["attachmentBeginV4", "attachmentChunkV4", "attachmentCommitV4", "attachmentAbortV4"];

const CHUNK_BYTES: u64 = 512 * 1024;
const MAX_BYTES: u64 = 20 * 1024 * 1024;

struct Staged {
    session_id: String,
    file_name: String,
    mime: String,
    total_bytes: u64,
    total_chunks: u64,
    checksum: String,
    bytes: Vec<u8>,
    next: u64,
}

/// A committed upload, by ref.
#[derive(Clone, Debug, PartialEq)]
struct Committed {
    session_id: String,
    file_name: String,
    mime: String,
    bytes: u64,
}

#[derive(Default)]
struct Uploads {
    staged: HashMap<String, Staged>,
    committed: HashMap<String, Committed>,
}

/// One simulator process is one Server: its uploads.
static UPLOADS: LazyLock<Mutex<Uploads>> = LazyLock::new(Mutex::default);

pub fn call(server: &Server, method: &str, args: &[Option<Value>]) -> CallResult {
    let params = object_arg(method, args)?;
    workspace(method, params)?;
    let session_id = string_field(method, params, "sessionId")?;
    if server.conversation(session_id).is_none() {
        return Err(RpcError::new(format!("Session not found: {session_id}")));
    }
    let upload_id = string_field(method, params, "uploadId")?.to_owned();
    let mut uploads = UPLOADS.lock().expect("uploads lock");
    match method {
        "attachmentBeginV4" => begin(&mut uploads, session_id, upload_id, params),
        "attachmentChunkV4" => chunk(&mut uploads, upload_id, params),
        "attachmentCommitV4" => commit(&mut uploads, upload_id),
        _ => {
            uploads.staged.remove(&upload_id);
            Ok(Some(json!({})))
        }
    }
    .map(Some)
    .map_err(RpcError::new)
    .map(|value| value.flatten())
}

fn number(params: &Map<String, Value>, key: &str) -> Result<u64, String> {
    params.get(key).and_then(Value::as_u64).ok_or_else(|| format!("{key}: expected a count"))
}

fn text<'a>(params: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    params
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| format!("{key}: expected a non-empty string"))
}

fn begin(
    uploads: &mut Uploads,
    session_id: &str,
    upload_id: String,
    params: &Map<String, Value>,
) -> Result<Option<Value>, String> {
    let total_bytes = number(params, "totalBytes")?;
    let total_chunks = number(params, "totalChunks")?;
    let checksum = text(params, "checksum")?;
    let hex = checksum.strip_prefix("sha256:").unwrap_or_default();
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(format!("checksum: expected sha256:<64 lower-case hex>, got {checksum}"));
    }
    if total_bytes > MAX_BYTES {
        return Err(format!("attachment exceeds the {MAX_BYTES}-byte limit: {total_bytes}"));
    }
    if total_chunks != total_bytes.div_ceil(CHUNK_BYTES) {
        return Err(format!("totalChunks {total_chunks} does not fit {total_bytes} bytes"));
    }
    let staged = Staged {
        session_id: session_id.to_owned(),
        file_name: text(params, "fileName")?.to_owned(),
        mime: text(params, "mime")?.to_owned(),
        total_bytes,
        total_chunks,
        checksum: hex.to_owned(),
        bytes: Vec::new(),
        next: 0,
    };
    uploads.staged.insert(upload_id.clone(), staged);
    Ok(Some(json!({"uploadId": upload_id, "state": "staging", "nextChunkIndex": 0})))
}

fn chunk(
    uploads: &mut Uploads,
    upload_id: String,
    params: &Map<String, Value>,
) -> Result<Option<Value>, String> {
    let staged = uploads.staged.get_mut(&upload_id).ok_or("unknown uploadId")?;
    let index = number(params, "chunkIndex")?;
    if index != staged.next || index >= staged.total_chunks {
        return Err(format!("chunkIndex {index}: expected {}", staged.next));
    }
    let data = params.get("dataBase64").and_then(Value::as_str).unwrap_or_default();
    let bytes = decode(data).ok_or("dataBase64: not valid base64")?;
    if bytes.len() as u64 > CHUNK_BYTES {
        return Err(format!("chunk {index} holds {} bytes, over {CHUNK_BYTES}", bytes.len()));
    }
    staged.bytes.extend(bytes);
    staged.next += 1;
    Ok(Some(json!({"uploadId": upload_id, "nextChunkIndex": staged.next})))
}

fn commit(uploads: &mut Uploads, upload_id: String) -> Result<Option<Value>, String> {
    let staged = uploads.staged.remove(&upload_id).ok_or("unknown uploadId")?;
    let name = &staged.file_name;
    if staged.next != staged.total_chunks || staged.bytes.len() as u64 != staged.total_bytes {
        return Err(format!(
            "attachment {name}: {} of {} bytes arrived",
            staged.bytes.len(),
            staged.total_bytes
        ));
    }
    if sha256_hex(&staged.bytes) != staged.checksum {
        return Err(format!("attachment {name}: checksum mismatch"));
    }
    check_bytes(name, &staged.mime, &staged.bytes)?;
    let reference = format!("att_{}", uploads.committed.len() + 1);
    eprintln!(
        "zcode-sim: attachment arrived whole: {name} ({}, {} bytes, sha256:{})",
        staged.mime, staged.total_bytes, staged.checksum
    );
    uploads.committed.insert(
        reference.clone(),
        Committed {
            session_id: staged.session_id,
            file_name: staged.file_name,
            mime: staged.mime,
            bytes: staged.total_bytes,
        },
    );
    Ok(Some(json!({"ref": reference})))
}

/// `sendText` attachments (`{ref, fileName, mime, bytes}`) must each name an upload committed
/// in this session, with its name, MIME type and size.
pub fn check_sent(session_id: &str, attachments: &[Value]) -> Result<(), String> {
    let uploads = UPLOADS.lock().expect("uploads lock");
    for (index, item) in attachments.iter().enumerate() {
        let reference = item.get("ref").and_then(Value::as_str).unwrap_or_default();
        let committed =
            uploads.committed.get(reference).filter(|c| c.session_id == session_id).ok_or_else(
                || format!("attachments[{index}]: no committed upload {reference:?}"),
            )?;
        let named = Committed {
            session_id: session_id.to_owned(),
            file_name: item.get("fileName").and_then(Value::as_str).unwrap_or_default().into(),
            mime: item.get("mime").and_then(Value::as_str).unwrap_or_default().into(),
            bytes: item.get("bytes").and_then(Value::as_u64).unwrap_or_default(),
        };
        if &named != committed {
            return Err(format!("attachments[{index}]: {named:?} is not the upload {committed:?}"));
        }
    }
    Ok(())
}
