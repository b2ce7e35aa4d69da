//! The agent's stdin/stdout as the SDK's line transport.
//!
//! What the SDK's own `Stdio` does differently, on purpose:
//! - **Lines that are not JSON are answered here, with a bounded echo** ([`malformed`]). A
//!   line that is not UTF-8 gets a parse error, not the end of the connection (the SDK reads
//!   `String` lines, and one invalid byte is an I/O error that ends every session); a request
//!   whose id can still be read is answered under that id, so it is answered exactly once and
//!   never run with altered text. Either way the error echoes at most 1 KiB of the line.
//! - **Input behind an `initialize` request waits for its answer** ([`gate`]), so a request
//!   pipelined right behind it sees the initialized connection.
//! - **A line is at most [`MAX_LINE_BYTES`] long.** A longer one is read to its end without
//!   being kept, and answered with an error naming the limit (under the request's id when it is
//!   near the start of the line): no client line can make the agent hold gigabytes.
//! - **Frames are written in batches.** The SDK writes and flushes each frame with a blocking
//!   call; during a busy turn that is one syscall and one thread hop per text delta. Here the
//!   frames go to a writer thread, which writes everything queued so far in one syscall.
//!   Nothing waits longer: the writer flushes as soon as it has drained the queue.
//! - **Sessions learn when the client has read their output** ([`flow`]), so what a slow client
//!   has not read yet stays bounded.

mod flow;
mod gate;
mod malformed;

use std::io::{self, Write};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use agent_client_protocol::Lines;
use futures::{Sink, Stream};
use tokio::io::{AsyncBufReadExt, BufReader};

use flow::Placeholder;
pub use flow::{BLOCK_METHOD, Flow, MARK_METHOD};
pub use gate::InitializeGate;
pub use malformed::ECHO_LIMIT;

/// A batch stops growing here, so one write never holds megabytes of frames back.
const MAX_BATCH: usize = 1 << 20;

/// The longest line read from the client: four times the size limit of one ACP message (the
/// coordinator's, 4 MiB), room for JSON escaping. What lies between is refused by the
/// coordinator with invalid params naming the message limit.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The transport, the writer that must be [`StdoutWriter::finish`]ed after the connection
/// ends so the last frames reach stdout before the process exits, and the connection's
/// [`Flow`] (for `ServerConfig::flow`).
pub fn transport() -> (
    Lines<
        impl Sink<String, Error = io::Error> + Send + 'static,
        impl Stream<Item = io::Result<String>> + Send + 'static,
    >,
    StdoutWriter,
    Arc<Flow>,
) {
    let flow = Arc::new(Flow::default());
    let (writer, frames) = StdoutWriter::spawn_with(io::stdout(), flow.clone());
    let gate = Arc::new(InitializeGate::default());
    let replies = Replies(frames.clone());
    let incoming = stdin_lines(tokio::io::stdin(), replies, gate.clone());
    (Lines::new(frame_sink(frames, gate, flow.clone()), incoming), writer, flow)
}

/// What goes to the writer thread.
pub enum Out {
    Frame(String),
    /// Resolve this mark once everything before it is written.
    Mark(u64),
}

/// Where the stdin reader sends its own answers (to lines that are not JSON).
#[derive(Clone)]
pub struct Replies(mpsc::Sender<Out>);

impl Replies {
    fn send(&self, frame: String) -> Result<(), mpsc::SendError<Out>> {
        self.0.send(Out::Frame(frame))
    }
}

/// The JSON lines of `input`, in order; the stream ends at EOF. Lines that are not JSON are
/// answered here, straight to `replies`. After an `initialize` request the next line is read
/// only once `gate` has seen its answer written.
pub fn stdin_lines(
    input: impl tokio::io::AsyncRead + Send + Unpin + 'static,
    replies: Replies,
    gate: Arc<InitializeGate>,
) -> impl Stream<Item = io::Result<String>> + Send + 'static {
    let state = (BufReader::new(input), replies, gate);
    futures::stream::try_unfold(state, |(mut input, replies, gate)| async {
        loop {
            gate.wait_open().await;
            let mut line = Vec::new();
            match read_line_capped(&mut input, &mut line, MAX_LINE_BYTES).await? {
                Read::End => return Ok(None),
                Read::Line => {}
                Read::TooLong(bytes) => {
                    let _ = replies.send(malformed::too_long_reply(&line, bytes, MAX_LINE_BYTES));
                    continue;
                }
            }
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let reply = match String::from_utf8(line) {
                Ok(text) => match malformed::parse_error_reply(&text) {
                    None => {
                        gate.on_incoming(&text);
                        return Ok(Some((text, (input, replies, gate))));
                    }
                    Some(reply) => reply,
                },
                Err(invalid) => {
                    malformed::not_utf8_reply(&String::from_utf8_lossy(invalid.as_bytes()))
                }
            };
            let _ = replies.send(reply);
        }
    })
}

enum Read {
    End,
    Line,
    /// The line had this many bytes; `line` holds its start.
    TooLong(usize),
}

/// Reads one line into `line` (newline included), keeping at most `cap` bytes of it: a longer
/// line is consumed to its end and reported with its length, its first bytes in `line`.
async fn read_line_capped(
    input: &mut (impl tokio::io::AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
    cap: usize,
) -> io::Result<Read> {
    let mut total = 0usize;
    loop {
        let buffer = input.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(match total {
                0 => Read::End,
                _ if total > cap => Read::TooLong(total),
                _ => Read::Line,
            });
        }
        let (chunk, done) = match memchr_newline(buffer) {
            Some(end) => (&buffer[..=end], true),
            None => (buffer, false),
        };
        let taken = chunk.len();
        if line.len() < cap {
            let room = cap - line.len();
            line.extend_from_slice(&chunk[..taken.min(room)]);
        }
        total += taken;
        input.consume(taken);
        if done {
            return Ok(if total > cap { Read::TooLong(total) } else { Read::Line });
        }
    }
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

/// The SDK's outgoing side: each frame is queued for the writer thread; a mark stands in the
/// queue for its place, and is never written.
fn frame_sink(
    frames: mpsc::Sender<Out>,
    gate: Arc<InitializeGate>,
    flow: Arc<Flow>,
) -> impl Sink<String, Error = io::Error> + Send {
    futures::sink::unfold((frames, gate, flow), |(frames, gate, flow), frame: String| async move {
        let out = match Flow::recognise(&frame) {
            Some(Placeholder::Mark(mark)) => Out::Mark(mark),
            Some(Placeholder::Block(block)) => match flow.take_block(block) {
                Some(lines) => Out::Frame(lines),
                None => return Ok((frames, gate, flow)),
            },
            None => {
                gate.on_outgoing(&frame);
                Out::Frame(frame)
            }
        };
        if let Err(mpsc::SendError(out)) = frames.send(out) {
            if let Out::Mark(mark) = out {
                flow.resolve(mark);
            }
            return Err(io::Error::from(io::ErrorKind::BrokenPipe));
        }
        Ok((frames, gate, flow))
    })
}

/// The thread that writes frames to stdout.
pub struct StdoutWriter {
    done: mpsc::Receiver<()>,
}

impl StdoutWriter {
    /// Starts the writer on `output`: frames sent on the returned channel are written in
    /// order, one line each; marks are resolved in `flow` once what precedes them is written.
    /// Sending fails once the output is gone.
    pub fn spawn_with(
        output: impl Write + Send + 'static,
        flow: Arc<Flow>,
    ) -> (Self, mpsc::Sender<Out>) {
        let (frames, queued) = mpsc::channel::<Out>();
        let (done_tx, done) = mpsc::channel();
        thread::Builder::new()
            .name("acp-stdout".into())
            .spawn(move || {
                // `write_batches` owns the queue: once `done` is sent, sending fails.
                if let Err(error) = write_batches(queued, output, &flow) {
                    tracing::debug!(target: "zcode_acp::acp", %error, "stdout closed");
                }
                // Nothing will be written any more: nobody waits for a mark.
                flow.resolve_all();
                let _ = done_tx.send(());
            })
            .expect("spawning the stdout writer thread");
        (Self { done }, frames)
    }

    /// Waits (up to `limit`) until every frame sent before the sink was dropped is written.
    pub fn finish(self, limit: Duration) {
        let _ = self.done.recv_timeout(limit);
    }
}

fn write_batches(
    queued: mpsc::Receiver<Out>,
    mut output: impl Write,
    flow: &Flow,
) -> io::Result<()> {
    let mut batch = Vec::with_capacity(64 * 1024);
    let mut marks = Vec::new();
    while let Ok(first) = queued.recv() {
        batch.clear();
        let mut next = Some(first);
        while let Some(out) = next.take() {
            match out {
                Out::Frame(frame) => push_line(&mut batch, frame),
                Out::Mark(mark) => marks.push(mark),
            }
            if batch.len() < MAX_BATCH {
                next = queued.try_recv().ok();
            }
        }
        if !batch.is_empty() {
            output.write_all(&batch)?;
            output.flush()?;
        }
        for mark in marks.drain(..) {
            flow.resolve(mark);
        }
    }
    Ok(())
}

fn push_line(batch: &mut Vec<u8>, frame: String) {
    batch.extend_from_slice(frame.as_bytes());
    batch.push(b'\n');
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use futures::{SinkExt, StreamExt};
    use serde_json::{Value, json};

    use super::*;

    #[tokio::test]
    async fn lines_that_are_not_json_are_answered_here_and_never_handed_on() {
        let input: &[u8] = b"{\"a\":1}\r\n{\"b\":\"\xff\"}\nnot json\n\xc3\x28\n\
            {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"\xfe\"}\n[1]\nlast";
        let (replies, replied) = mpsc::channel();
        let gate = Arc::new(InitializeGate::default());
        let lines: Vec<String> =
            stdin_lines(input, Replies(replies), gate).map(Result::unwrap).collect().await;
        // JSON text goes on (the SDK answers a batch or a bare value itself).
        assert_eq!(lines, ["{\"a\":1}", "[1]"]);
        let replies: Vec<Value> = replied
            .try_iter()
            .map(|out| match out {
                Out::Frame(r) => serde_json::from_str(&r).unwrap(),
                Out::Mark(_) => panic!("no mark here"),
            })
            .collect();
        let ids: Vec<&Value> = replies.iter().map(|r| &r["id"]).collect();
        assert_eq!(ids, [&Value::Null, &Value::Null, &Value::Null, &json!(7), &Value::Null]);
        assert!(replies.iter().all(|r| r["error"]["code"] == -32700), "{replies:?}");
    }

    #[tokio::test]
    async fn a_line_over_the_cap_is_consumed_and_answered_without_being_kept() {
        let cap = 64;
        let long = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"x\",\"p\":\"{}\"}}\n",
            "y".repeat(500)
        );
        let exact = format!("{}\n", "z".repeat(cap - 1));
        let input = format!("{long}{exact}tail");
        let mut reader = BufReader::with_capacity(16, input.as_bytes());
        let mut line = Vec::new();
        match read_line_capped(&mut reader, &mut line, cap).await.unwrap() {
            Read::TooLong(bytes) => assert_eq!(bytes, long.len()),
            _ => panic!("the long line is refused"),
        }
        assert_eq!(line.len(), cap, "only the start of it is kept");
        let reply: Value =
            serde_json::from_str(&malformed::too_long_reply(&line, long.len(), cap)).unwrap();
        assert_eq!(
            (reply["id"].clone(), reply["error"]["code"].clone()),
            (json!(9), json!(-32602))
        );
        let mut line = Vec::new();
        assert!(matches!(read_line_capped(&mut reader, &mut line, cap).await.unwrap(), Read::Line));
        assert_eq!(line, exact.as_bytes(), "a line of exactly the cap is read whole");
        let mut line = Vec::new();
        assert!(matches!(read_line_capped(&mut reader, &mut line, cap).await.unwrap(), Read::Line));
        assert_eq!(line, b"tail");
        assert!(matches!(
            read_line_capped(&mut reader, &mut Vec::new(), cap).await.unwrap(),
            Read::End
        ));
    }

    #[tokio::test]
    async fn a_line_behind_initialize_is_read_only_after_its_answer() {
        let input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}\n\
            {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\"}\n";
        let (replies, _replied) = mpsc::channel();
        let gate = Arc::new(InitializeGate::default());
        let mut lines = Box::pin(stdin_lines(input, Replies(replies), gate.clone()));
        assert!(lines.next().await.unwrap().unwrap().contains("initialize"));
        let second = tokio::spawn(async move { lines.next().await.unwrap().unwrap() });
        tokio::task::yield_now().await;
        assert!(!second.is_finished(), "read before initialize was answered");
        gate.on_outgoing(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert!(second.await.unwrap().contains("session/new"));
    }

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn every_frame_is_written_in_order_before_finish_returns() {
        let output = Shared::default();
        let (writer, frames) = StdoutWriter::spawn_with(output.clone(), Arc::default());
        let mut sink = Box::pin(frame_sink(frames, Arc::default(), Arc::default()));
        for n in 0..10_000 {
            sink.send(format!("{{\"n\":{n}}}")).await.unwrap();
        }
        drop(sink);
        writer.finish(Duration::from_secs(10));
        let written = String::from_utf8(output.0.lock().unwrap().clone()).unwrap();
        let expected: String = (0..10_000).map(|n| format!("{{\"n\":{n}}}\n")).collect();
        assert_eq!(written, expected);
    }

    #[tokio::test]
    async fn a_block_is_written_in_the_place_of_its_placeholder() {
        let output = Shared::default();
        let flow = Arc::new(Flow::default());
        let (writer, frames) = StdoutWriter::spawn_with(output.clone(), flow.clone());
        let mut sink = Box::pin(frame_sink(frames, Arc::default(), flow.clone()));
        let mut placeholders = Vec::new();
        for block in ["{\"b\":1}\n{\"b\":2}", "{\"b\":3}"] {
            flow.block(block.into(), |message| {
                let frame =
                    json!({"jsonrpc": "2.0", "method": message.method, "params": message.params});
                placeholders.push(frame.to_string());
                Ok(())
            })
            .unwrap();
        }
        sink.send("{\"a\":1}".into()).await.unwrap();
        sink.send(placeholders[0].clone()).await.unwrap();
        sink.send("{\"a\":2}".into()).await.unwrap();
        sink.send(placeholders[1].clone()).await.unwrap();
        // A placeholder seen twice (never sent so by the SDK) writes nothing the second time.
        sink.send(placeholders[1].clone()).await.unwrap();
        drop(sink);
        writer.finish(Duration::from_secs(10));
        let written = String::from_utf8(output.0.lock().unwrap().clone()).unwrap();
        assert_eq!(written, "{\"a\":1}\n{\"b\":1}\n{\"b\":2}\n{\"a\":2}\n{\"b\":3}\n");
    }

    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_closed_stdout_fails_the_sink() {
        let (writer, frames) = StdoutWriter::spawn_with(Closed, Arc::default());
        let mut sink = Box::pin(frame_sink(frames, Arc::default(), Arc::default()));
        let _ = sink.send("first".into()).await; // may be queued before the writer fails
        writer.finish(Duration::from_secs(10));
        let error = sink.send("second".into()).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::BrokenPipe);
    }
}
