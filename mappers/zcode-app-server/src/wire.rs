//! The Agent's envelope: one JSON object a line (or a JSON array of them, a batch read in order:
//! `zcode_mapper_sdk::framing::json_batch`), no `jsonrpc`; a frame with `id` and `method` is
//! a request (the Agent's own ids are strings, `server-<n>`), `id` with `result`/`error` a
//! response, `method` alone a notification (`packages/shared/src/zcode-protocol/index.ts`).

use std::borrow::Cow;
use std::marker::PhantomData;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use zcode_contract::{ErrorKind, MapperError, NativeReply, ReplyBody};

use zcode_mapper_sdk::compact::Reader;
use zcode_mapper_sdk::elide::{Compactor, Path, Paths};
use zcode_mapper_sdk::framing::json_batch;
use zcode_mapper_sdk::json::{parse, protocol};
use zcode_v4::stream;

pub use zcode_v4::stream::{object, raw_str};

/// What one line of Agent output is. Its members are borrowed from the line as they came: a
/// frame is never built into a tree to be classified (a turn's last frames carry its whole
/// text, megabytes; F-24), and whoever needs a member reads just that.
///
/// `P` is how `params` is read, in the same pass as the envelope: as it came (`&RawValue`), or
/// straight into the [`Members`] the reader needs of it (the connection's route members, the
/// session's event head and V4 wire members), so the parameters are not scanned a second time.
#[derive(Debug)]
pub enum Frame<'a, P = &'a RawValue> {
    /// The answer to one of our requests (our ids are the core's numbers).
    Reply(NativeReply),
    /// A request of the Agent to us.
    Request {
        id: &'a RawValue,
        method: Cow<'a, str>,
        params: Option<P>,
    },
    Notification {
        method: Cow<'a, str>,
        params: Option<P>,
    },
}

/// The envelope's members. `present` keeps a member that is `null` (`{"id": null}` is still an
/// id); `method` is a raw value because one that is not a string counts as absent.
#[derive(Deserialize)]
#[serde(bound(deserialize = "P: Deserialize<'de>"))]
struct Envelope<'a, P> {
    #[serde(default, deserialize_with = "present")]
    jsonrpc: Option<IgnoredAny>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    method: Option<&'a RawValue>,
    #[serde(default)]
    params: Option<P>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// A member that is there, whatever its value (`null` included).
pub fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// The names of the members of a JSON object a reader keeps ([`Members`]), at most
/// [`MAX_MEMBERS`].
pub trait MemberNames {
    const NAMES: &'static [&'static str];
}

pub const MAX_MEMBERS: usize = 8;

/// The [`MemberNames`] members of a JSON object, borrowed as they came, read in the pass that
/// reads the frame around them ([`classify_as`]): every other member is skipped, not built into
/// anything. Reading them is never an error, so that a frame is refused (or not) for what its
/// reader makes of them: a value that is not an object has none of them, and a member named
/// twice is kept last, as a tree keeps it, and said ([`Members::twice`]).
///
/// Issue 27: JSON scanning was 39 % of zcode-acp's CPU per Desktop delta, each line scanned
/// once for its envelope and again for the members of its parameters.
pub struct Members<'a, N> {
    values: [Option<&'a RawValue>; MAX_MEMBERS],
    object: bool,
    /// The members named twice, a bit each, by their place in `N::NAMES`.
    twice: u8,
    names: PhantomData<N>,
}

impl<N> Default for Members<'_, N> {
    fn default() -> Self {
        Self { values: [None; MAX_MEMBERS], object: false, twice: 0, names: PhantomData }
    }
}

impl<'a, N: MemberNames> Members<'a, N> {
    /// The place of member `name` in `N::NAMES`.
    fn index(name: &str) -> Option<usize> {
        let index = N::NAMES.iter().position(|n| *n == name);
        debug_assert!(index.is_some(), "{name} is not read");
        index
    }

    /// Member `name` (one of `N::NAMES`).
    pub fn get(&self, name: &str) -> Option<&'a RawValue> {
        self.values[Self::index(name)?]
    }

    /// Whether the value was a JSON object.
    pub fn is_object(&self) -> bool {
        self.object
    }

    /// A member named twice, the first of them in `N::NAMES`.
    pub fn twice(&self) -> Option<&'static str> {
        (self.twice != 0).then(|| N::NAMES[self.twice.trailing_zeros() as usize])
    }

    /// Whether member `name` (one of `N::NAMES`) was named twice.
    pub fn named_twice(&self, name: &str) -> bool {
        Self::index(name).is_some_and(|index| self.twice & 1 << index != 0)
    }
}

impl<'de, N: MemberNames> Deserialize<'de> for Members<'de, N> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MembersVisitor(PhantomData))
    }
}

/// A member name, unescaped as serde reads field names: its place in `N::NAMES`, if any. The
/// names are constants here, so the comparisons compile to a derived identifier's.
struct Key<N>(PhantomData<N>);

impl<'de, N: MemberNames> DeserializeSeed<'de> for Key<N> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<N: MemberNames> Visitor<'_> for Key<N> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, name: &str) -> Result<Self::Value, E> {
        Ok(N::NAMES.iter().position(|n| *n == name))
    }
}

struct MembersVisitor<N>(PhantomData<N>);

impl<'de, N: MemberNames> Visitor<'de> for MembersVisitor<N> {
    type Value = Members<'de, N>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("frame parameters")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        const { assert!(N::NAMES.len() <= MAX_MEMBERS, "more names than Members keeps") };
        let mut members = Members { object: true, ..Members::default() };
        while let Some(key) = map.next_key_seed(Key::<N>(PhantomData))? {
            let Some(index) = key else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            let value = map.next_value::<&'de RawValue>()?;
            if members.values[index].replace(value).is_some() {
                members.twice |= 1 << index;
            }
        }
        Ok(members)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Members::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Members::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Members::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Members::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Members::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Members::default())
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Members::default())
    }
}

/// A raw member as a tree, for the few places that need one (ids, errors, parameters of a
/// reverse request); `null` when absent, as a tree's missing member reads.
pub fn raw_value(raw: Option<&RawValue>) -> Result<Value, MapperError> {
    match raw {
        None => Ok(Value::Null),
        Some(raw) => serde_json::from_str(raw.get())
            .map_err(|e| protocol(format!("ZCode wrote a member that cannot be read: {e}"))),
    }
}

/// Whether `text`, valid JSON or not, is a JSON object. A struct is also read from an array (by
/// position), so anything else is refused before the envelope is read.
fn is_object(text: &str) -> bool {
    text.trim_start().starts_with('{')
}

/// Splits and classifies one complete line.
pub fn classify(text: &str) -> Result<Frame<'_>, MapperError> {
    classify_as(text)
}

/// [`classify`], with `params` read as `P` in the same pass.
pub fn classify_as<'a, P: Deserialize<'a>>(text: &'a str) -> Result<Frame<'a, P>, MapperError> {
    if !is_object(text) {
        return Err(match serde_json::from_str::<IgnoredAny>(text) {
            Ok(_) => not_an_object(),
            Err(e) => protocol(format!("ZCode wrote a non-JSON line: {e}")),
        });
    }
    frame(serde_json::from_str(text).map_err(envelope_error)?)
}

fn not_an_object() -> MapperError {
    protocol("ZCode wrote a line that is not a JSON object")
}

fn envelope_error(e: serde_json::Error) -> MapperError {
    match e.classify() {
        // Only a member named twice: JSON.stringify never writes one, and which would win is
        // a guess.
        serde_json::error::Category::Data => {
            protocol(format!("ZCode wrote a frame that is not one envelope: {e}"))
        }
        _ => protocol(format!("ZCode wrote a non-JSON line: {e}")),
    }
}

/// What an envelope read says the frame is.
fn frame<'a, P>(envelope: Envelope<'a, P>) -> Result<Frame<'a, P>, MapperError> {
    if envelope.jsonrpc.is_some() {
        return Err(protocol(
            "ZCode wrote a JSON-RPC 2.0 frame; the Agent speaks NDJSON without it",
        ));
    }
    let Envelope { id, method, params, result, error, .. } = envelope;
    match (id, raw_str(method)) {
        (Some(id), Some(method)) => Ok(Frame::Request { id, method, params }),
        (None, Some(method)) => Ok(Frame::Notification { method, params }),
        (Some(id), None) => reply(id, result, error),
        (None, None) => Err(protocol("ZCode wrote a frame with neither `id` nor `method`")),
    }
}

/// The topic of a line that opens as a V4 conversation frame, read no further: the line starts
/// `{"method":"v4/conversation/frame","params":{`, and the wire frame's members before `topic`
/// are scalars. That is how ZCode writes it: the short members first (`encodeTopicWireFrames`),
/// in the order a strace capture of Desktop 3.11.2 quotes (`docs/mapper-zcode-app-server.md`
/// §6). `None` for a line that opens any other way: the general reader takes it.
///
/// Issue 27: a streamed delta's V4 line is read whole by the session it is routed to, which
/// refuses what the connection no longer reads (a line that is not JSON, a member named twice,
/// `topic` too, an `id` after the params). Reading it whole here as well cost a tenth of
/// zcode-acp's CPU per Desktop delta. A frame for a topic no session holds is then dropped
/// unread past its topic, as its content is. The members before the topic are read as JSON
/// (`compact::Reader`), not searched for `"topic":`: natively a search is cheaper, but in
/// WebAssembly `memchr` has no vector search, and it was a tenth of the guests' time (the
/// twenty-sixth session in `docs/performance.md`).
pub fn leading_frame_topic(line: &str) -> Option<&str> {
    let params = line.strip_prefix(stream::FRAME_HEAD)?;
    // In ZCode's order the fixed text is compared, as the session then reads the line; in any
    // other the members are found by name.
    stream::read_wire_head(&mut Reader::new(params)).map(|head| head.topic).or_else(|| {
        let mut params = Reader::new(params);
        params.find_after_scalars("topic")?;
        params.plain_str()
    })
}

/// The V4 conversation frame `text` opens with, as ZCode writes one, up to its end: found by the
/// compact reader, which passes over it far faster than the envelope's serde read. A streamed
/// delta's frame in ZCode's own order is walked on its fixed text, any other member by member.
/// `None` for anything else, or for a frame the compact reader does not read.
fn v4_frame_text(text: &str) -> Option<&str> {
    if !text.starts_with(stream::FRAME_HEAD) {
        return None;
    }
    match stream::frame_len_as_written(text) {
        Some(len) => Some(&text[..len]),
        None => Reader::new(text).value_text(),
    }
}

/// JSON's whitespace.
const WHITESPACE: [char; 4] = [' ', '\t', '\n', '\r'];

/// The frames of a line holding a JSON array, a batch (as [`json_batch`] splits one), each
/// handed to `each` in order with its own text, and read as [`classify_as`] reads a line in the
/// pass that finds where it ends, so that a batch is not scanned once to be split and again
/// frame by frame (issue 27). A frame that opens as ZCode writes a V4 conversation frame comes
/// unread (`None`), its end found by the compact reader: the caller routes it as it routes such
/// a line, on its head ([`leading_frame_topic`]), and its session reads it whole. `false` for a
/// line that is no array.
///
/// It fails as the split and then the frames' reads did: a line that is not JSON as no array of
/// frames (whatever else failed), else at the first frame that fails, here or in `each`.
pub fn classify_batch<'a, P: Deserialize<'a>>(
    line: &'a str,
    each: impl FnMut(&'a str, Option<Frame<'a, P>>) -> Result<(), MapperError>,
) -> Result<bool, MapperError> {
    let Some(inner) = line.strip_prefix('[') else { return Ok(false) };
    // Failing, the SDK's split says whether the array is at fault (it is then its error).
    batch_frames(inner, each)
        .map(|()| true)
        .map_err(|error| json_batch(line).err().unwrap_or(error))
}

/// [`classify_batch`] after the `[`; an error may be the array's, which the caller tells.
fn batch_frames<'a, P: Deserialize<'a>>(
    inner: &'a str,
    mut each: impl FnMut(&'a str, Option<Frame<'a, P>>) -> Result<(), MapperError>,
) -> Result<(), MapperError> {
    let not_an_array = || protocol("A line of host output is not a JSON array of frames");
    let end = |after: &str| {
        after.trim_matches(WHITESPACE).is_empty().then_some(()).ok_or_else(not_an_array)
    };
    let mut rest = inner.trim_start_matches(WHITESPACE);
    if let Some(after) = rest.strip_prefix(']') {
        return end(after);
    }
    loop {
        if !rest.starts_with('{') {
            return Err(not_an_object());
        }
        let after = match v4_frame_text(rest) {
            Some(text) => {
                each(text, None)?;
                &rest[text.len()..]
            }
            None => {
                // A stream reader says where the frame ended; after an object it asks nothing
                // more.
                let mut stream =
                    serde_json::Deserializer::from_str(rest).into_iter::<Envelope<'a, P>>();
                let envelope = stream.next().ok_or_else(not_an_array)?.map_err(envelope_error)?;
                let (text, after) = rest.split_at(stream.byte_offset());
                each(text, Some(frame(envelope)?))?;
                after
            }
        };
        rest = after.trim_start_matches(WHITESPACE);
        match rest.strip_prefix(',') {
            Some(after) => rest = after.trim_start_matches(WHITESPACE),
            None => return end(rest.strip_prefix(']').ok_or_else(not_an_array)?),
        }
    }
}

/// A reply: a successful one's result is handed on as the text it came as, never as a tree (a
/// session's last read can be megabytes).
fn reply<'a, P>(
    id: &RawValue,
    result: Option<&RawValue>,
    error: Option<&RawValue>,
) -> Result<Frame<'a, P>, MapperError> {
    let Ok(number) = serde_json::from_str::<u64>(id.get()) else {
        // `parse-error` / `invalid-message`: the Agent refused a frame of ours and cannot say
        // which one. Nothing can be matched, so the transport fails closed.
        let error = raw_value(error)?;
        let message = error.get("message").and_then(Value::as_str).unwrap_or("no message");
        return Err(protocol(format!(
            "ZCode refused a frame it could not attribute ({}): {message}",
            raw_value(Some(id))?
        )));
    };
    let body = match (result, error) {
        (Some(result), None) => ReplyBody::Ok(result.get().into()),
        (None, Some(error)) => ReplyBody::Error(native_error(&raw_value(Some(error))?)),
        (Some(_), Some(_)) => {
            return Err(protocol(format!("ZCode reply {number} has both a result and an error")));
        }
        (None, None) => {
            return Err(protocol(format!("ZCode reply {number} has neither result nor error")));
        }
    };
    Ok(Frame::Reply(NativeReply { id: number, body }))
}

/// A native error object as a mapper error: the message, and the code (and the Agent's `data`
/// when it is an object) as non-secret details.
pub fn native_error(error: &Value) -> MapperError {
    let code = error.get("code").and_then(Value::as_i64);
    let message = error.get("message").and_then(Value::as_str).unwrap_or("ZCode reported an error");
    let kind = match code {
        Some(-32602) => ErrorKind::InvalidParams,
        Some(-32004) => ErrorKind::NotFound,
        Some(-32601) => ErrorKind::Unsupported,
        _ => ErrorKind::Native,
    };
    let mut data = json!({ "nativeCode": code });
    if let Some(Value::Object(detail)) = error.get("data")
        && let Some(reason) = detail.get("code").and_then(Value::as_str)
    {
        data["nativeReason"] = json!(reason);
    }
    MapperError { kind, message: message.to_string(), data: Some(data.to_string()) }
}

/// Parses ACP parameters (the client's fault when malformed).
pub fn acp_params(text: &str) -> Result<Value, MapperError> {
    parse(text, ErrorKind::InvalidParams, "Parameter text")
}

/// Parses a native result (ZCode's fault when malformed).
pub fn native_value(text: &str, what: &str) -> Result<Value, MapperError> {
    parse(text, ErrorKind::Protocol, what)
}

/// One NDJSON line.
pub fn line(value: &Value) -> Vec<u8> {
    let mut bytes = value.to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

pub fn request(id: u64, method: &str, params: Value) -> Vec<u8> {
    line(&json!({"id": id, "method": method, "params": params}))
}

/// The answer to a request of the Agent (its own id, echoed).
pub fn result(id: &Value, result: Value) -> Vec<u8> {
    line(&json!({"id": id, "result": result}))
}

pub fn error_reply(id: &Value, code: i64, message: &str) -> Vec<u8> {
    line(&json!({"id": id, "error": {"code": code, "message": message}}))
}

/// Lines of a byte stream, keeping an incomplete tail for the next push. A line that grows
/// long is compacted as it comes ([`ELIDED`]), so the turn's last frames, which carry its whole
/// text again, are never held whole (issue 27).
#[derive(Default)]
pub struct Lines {
    /// The start of a line that an earlier push began: never a newline.
    buffer: Vec<u8>,
    /// The line in progress once it passed [`COMPACT_FROM`], and its bytes so far.
    long: Option<(Compactor, usize)>,
}

/// A line longer than this without a newline is not a frame the Agent writes.
const MAX_LINE: usize = 64 * 1024 * 1024;
/// A line buffer that grew past this is freed once its line is read, not kept for the next.
const KEEP_AT_MOST: usize = 1024 * 1024;
/// A line longer than this is compacted as it comes.
const COMPACT_FROM: usize = 256 * 1024;

/// Strings the Agent writes again whole after streaming them: past [`ELIDE_FROM`] bytes they are
/// elided, keeping their last [`ELIDED_TAIL`] bytes. The session checks that they continue what
/// it streamed, and shows any rest from the tail (`zcode_mapper_sdk::elide`).
const ELIDED: Paths = &[
    // A V4 text row, appended or upserted whole: the turn's last frame upserts its message.
    // (Whatever the row's kind: the session shows no other row's `text`.)
    Path::at(&["params", "frame", "payload", "deltas", "row", "text"]),
    // The legacy `turn.completed` (and `model.response`): the turn's text again, never read.
    Path::at(&["params", "payload", "response"]),
];
const ELIDE_FROM: usize = 256 * 1024;
const ELIDED_TAIL: usize = 64 * 1024;

fn not_utf8() -> MapperError {
    protocol("ZCode wrote a line that is not UTF-8")
}

fn too_long() -> MapperError {
    protocol("ZCode wrote a line longer than 64 MiB")
}

/// `line` (a whole line, without its newline) to `each`, unless it is blank.
fn read_line(
    line: &[u8],
    each: &mut impl FnMut(&str) -> Result<(), MapperError>,
) -> Result<(), MapperError> {
    match zcode_mapper_sdk::text::utf8(line).map_err(|_| not_utf8())?.trim() {
        "" => Ok(()),
        text => each(text),
    }
}

impl Lines {
    /// Hands each line `bytes` completes to `each`, in order, borrowed: a push carries
    /// hundreds of deltas, and none is copied out on its own. The lines that begin and end in
    /// this push are read where they are; only a line's start is kept for the next push.
    pub fn push(
        &mut self,
        mut bytes: &[u8],
        mut each: impl FnMut(&str) -> Result<(), MapperError>,
    ) -> Result<(), MapperError> {
        if let Some((compactor, read)) = &mut self.long {
            let end = memchr::memchr(b'\n', bytes);
            let part = &bytes[..end.unwrap_or(bytes.len())];
            *read += part.len();
            if *read > MAX_LINE {
                return Err(too_long());
            }
            compactor.push(part)?;
            let Some(end) = end else { return Ok(()) };
            let (compactor, _) = self.long.take().expect("a long line is in progress");
            read_line(&compactor.finish(), &mut each)?;
            bytes = &bytes[end + 1..];
        }
        if !self.buffer.is_empty() {
            // The line begun earlier ends at this push's first newline.
            let Some(end) = memchr::memchr(b'\n', bytes) else {
                self.buffer.extend_from_slice(bytes);
                return self.hold();
            };
            self.buffer.extend_from_slice(&bytes[..end]);
            read_line(&self.buffer, &mut each)?;
            if self.buffer.capacity() > KEEP_AT_MOST {
                self.buffer = Vec::new();
            } else {
                self.buffer.clear();
            }
            bytes = &bytes[end + 1..];
        }
        let mut start = 0;
        while let Some(offset) = memchr::memchr(b'\n', &bytes[start..]) {
            read_line(&bytes[start..start + offset], &mut each)?;
            start += offset + 1;
        }
        self.buffer.extend_from_slice(&bytes[start..]);
        self.hold()
    }

    /// Checks the start of a line kept for the next push: within bounds, and compacted from
    /// [`COMPACT_FROM`] on.
    fn hold(&mut self) -> Result<(), MapperError> {
        if self.buffer.len() > MAX_LINE {
            return Err(too_long());
        }
        if self.buffer.len() > COMPACT_FROM {
            let mut compactor = Compactor::new(ELIDED, ELIDE_FROM, ELIDED_TAIL);
            compactor.push(&self.buffer)?;
            self.long = Some((compactor, self.buffer.len()));
            // Freed, not kept: the next lines are short again.
            self.buffer = Vec::new();
        }
        Ok(())
    }

    /// At end of file: a last line without its newline is still a line (the Agent's transport
    /// reads one the same way), anything else is fine.
    pub fn finish(
        &mut self,
        each: impl FnMut(&str) -> Result<(), MapperError>,
    ) -> Result<(), MapperError> {
        if self.buffer.is_empty() && self.long.is_none() {
            return Ok(());
        }
        self.push(b"\n", each)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use zcode_mapper_sdk::elide::ELIDED as ELIDED_MARK;

    use super::*;

    struct Names;

    impl MemberNames for Names {
        const NAMES: &'static [&'static str] = &["seq", "type"];
    }

    fn members(text: &str) -> Members<'_, Names> {
        serde_json::from_str(text).unwrap()
    }

    fn get<'a>(members: &Members<'a, Names>, name: &str) -> Option<&'a str> {
        members.get(name).map(RawValue::get)
    }

    /// The head of a V4 line as ZCode writes it is compared, not read by name; in another order
    /// it is read by name, to the same topic.
    #[test]
    fn finds_the_topic_in_zcodes_order_without_member_names() {
        let params = r#"{"wireVersion":3,"kind":"complete","deliveryKind":"online","logicalFrameId":"sub:4","logicalFrameOrdinal":4,"topic":"conversation/a","subscriptionId":"sub","frame":{}}"#;
        let reordered = params
            .replace(r#""wireVersion":3,"kind""#, r#""kind""#)
            .replace(r#""logicalFrameOrdinal":4,"#, r#""logicalFrameOrdinal":4,"wireVersion":3,"#);
        let head = |params: &str| {
            stream::read_wire_head(&mut Reader::new(params)).map(|head| head.topic.to_string())
        };
        assert_eq!(head(params).as_deref(), Some("conversation/a"));
        assert_eq!(head(&reordered), None);
        for params in [params, &reordered] {
            let line = format!("{}{params}}}", stream::FRAME_HEAD);
            assert_eq!(leading_frame_topic(&line), Some("conversation/a"), "{line}");
        }
    }

    #[test]
    fn members_are_read_by_their_unescaped_names_and_the_rest_is_skipped() {
        let read = members(r#"{"payload":{"seq":9},"s\u0065q":1,"type":"a\"b","other":[1]}"#);
        assert!(read.is_object() && read.twice().is_none());
        assert_eq!((get(&read, "seq"), get(&read, "type")), (Some("1"), Some(r#""a\"b""#)));
        let twice = members(r#"{"seq":1,"seq":2}"#);
        assert_eq!((twice.twice(), get(&twice, "seq")), (Some("seq"), Some("2")));
        for other in ["[1,{\"seq\":1}]", "\"seq\"", "1", "-1", "1.5", "true", "null"] {
            let read = members(other);
            assert!(!read.is_object() && get(&read, "seq").is_none(), "{other}");
        }
        assert!(serde_json::from_str::<Members<'_, Names>>(r#"{"seq":}"#).is_err());
    }

    /// Every line of `input` pushed in chunks of `chunk` bytes, then what `finish` adds.
    fn lines_of(input: &str, chunk: usize) -> Vec<String> {
        let mut lines = Lines::default();
        let mut out = Vec::new();
        let mut keep = |line: &str| {
            out.push(line.to_string());
            Ok(())
        };
        for piece in input.as_bytes().chunks(chunk) {
            lines.push(piece, &mut keep).unwrap();
        }
        lines.finish(&mut keep).unwrap();
        out
    }

    /// A line is the same whether it came in one push, began in an earlier one, or spans many:
    /// a character cut between two pushes included. Blank lines are no lines, and a line that is
    /// not UTF-8 is refused wherever it was cut.
    #[test]
    fn lines_are_the_same_however_the_pushes_cut_them() {
        let input = "{\"a\":\"é€\"}\n\n  \r\n{\"b\":1}\r\n[{\"c\":\"𝄞\"}]\n{\"d\":2}";
        let whole = lines_of(input, input.len());
        assert_eq!(whole, [r#"{"a":"é€"}"#, r#"{"b":1}"#, r#"[{"c":"𝄞"}]"#, r#"{"d":2}"#]);
        for chunk in 1..input.len() {
            assert_eq!(lines_of(input, chunk), whole, "chunks of {chunk}");
        }
        let mut bad = b"{\"a\":1}\n{\"b\":\"".to_vec();
        bad.extend_from_slice(&[0xc3, b'"', b'}', b'\n']);
        for chunk in [1, 3, bad.len()] {
            let mut lines = Lines::default();
            let mut seen = Vec::new();
            let mut keep = |line: &str| {
                seen.push(line.to_string());
                Ok(())
            };
            let refused = bad.chunks(chunk).find_map(|piece| lines.push(piece, &mut keep).err());
            assert_eq!(refused.map(|e| e.message), Some(not_utf8().message), "chunks of {chunk}");
            assert_eq!(seen, [r#"{"a":1}"#], "chunks of {chunk}");
        }
    }

    #[test]
    fn a_long_line_is_compacted_as_it_comes_and_the_lines_around_it_are_whole() {
        let text = "r\"é".repeat(100_000);
        let completed = json!({"method": "session/event", "params": {"sessionId": "s", "type": "turn.completed",
            "payload": {"response": text, "resultType": "success"}}});
        // Off the paths: a reply holding the same text comes whole.
        let reply = json!({"id": 7, "result": {"payload": {"response": text}}});
        let input = format!("{{\"a\":1}}\n{completed}\r\n{reply}\n{{\"b\":2}}\n{{\"c\":3}}");
        // The core pushes at most 64 KiB at a time (a line already whole in one push is taken
        // as it is: it is in memory already).
        for chunk in [64 * 1024, 1000] {
            let lines = lines_of(&input, chunk);
            assert_eq!(lines.len(), 5, "chunks of {chunk}");
            let compacted: Value = serde_json::from_str(&lines[1]).unwrap();
            let elided = &compacted["params"]["payload"]["response"][ELIDED_MARK];
            assert_eq!(elided["bytes"], text.len(), "chunks of {chunk}");
            assert_eq!(elided["tail"].as_str().unwrap().len(), ELIDED_TAIL);
            compacted["params"]["payload"]["response"].as_object().unwrap();
            let mut rest = compacted.clone();
            rest["params"]["payload"]["response"] =
                completed["params"]["payload"]["response"].clone();
            assert_eq!(rest, completed);
            assert!(lines[1].len() < 2 * ELIDED_TAIL, "the tail, escaped, and the rest");
            assert_eq!(serde_json::from_str::<Value>(&lines[2]).unwrap(), reply);
            assert_eq!(
                [&lines[0], &lines[3], &lines[4]],
                [r#"{"a":1}"#, r#"{"b":2}"#, r#"{"c":3}"#]
            );
        }
        // Cut off at the end of the input, the line is no JSON a reader takes.
        let cut = &completed.to_string()[..COMPACT_FROM + 10];
        let lines = lines_of(cut, 64 * 1024);
        assert!(lines.len() == 1 && serde_json::from_str::<Value>(&lines[0]).is_err());
    }
}
