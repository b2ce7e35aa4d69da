//! The agent's stdin/stdout as the SDK's line transport.
//!
//! Two things the SDK's own `Stdio` does differently, on purpose:
//! - **A line that is not UTF-8 gets a parse error, not the end of the connection.** The SDK
//!   reads `String` lines, and one invalid byte is an I/O error that ends every session. Here
//!   a request whose id can still be read is answered `-32700` under that id (so it is
//!   answered exactly once, and never run with altered text); any other such line is handed
//!   on as its lossy decoding behind U+FFFD, which no JSON text starts with, so the SDK
//!   answers it `-32700` like any other non-JSON line.
//! - **Frames are written in batches.** The SDK writes and flushes each frame with a blocking
//!   call; during a busy turn that is one syscall and one thread hop per text delta. Here the
//!   frames go to a writer thread, which writes everything queued so far in one syscall.
//!   Nothing waits longer: the writer flushes as soon as it has drained the queue.

use std::io::{self, Write};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use agent_client_protocol::Lines;
use futures::{Sink, Stream};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// No JSON text starts with U+FFFD, so a line carrying it first is surely a parse error.
const NOT_UTF8: char = '\u{FFFD}';
/// A batch stops growing here, so one write never holds megabytes of frames back.
const MAX_BATCH: usize = 1 << 20;

/// The transport, and the writer that must be [`StdoutWriter::finish`]ed after the connection
/// ends so the last frames reach stdout before the process exits.
pub fn transport() -> (
    Lines<
        impl Sink<String, Error = io::Error> + Send + 'static,
        impl Stream<Item = io::Result<String>> + Send + 'static,
    >,
    StdoutWriter,
) {
    let (writer, frames) = StdoutWriter::spawn(io::stdout());
    let incoming = stdin_lines(tokio::io::stdin(), frames.clone());
    (Lines::new(frame_sink(frames), incoming), writer)
}

/// Lines of `input` (see the module docs for those that are not UTF-8); the stream ends at
/// EOF. Parse errors this layer answers itself go straight to `replies`.
pub fn stdin_lines(
    input: impl tokio::io::AsyncRead + Send + Unpin + 'static,
    replies: mpsc::Sender<String>,
) -> impl Stream<Item = io::Result<String>> + Send + 'static {
    futures::stream::try_unfold((BufReader::new(input), replies), |(mut input, replies)| async {
        loop {
            let mut line = Vec::new();
            if input.read_until(b'\n', &mut line).await? == 0 {
                return Ok(None);
            }
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let invalid = match String::from_utf8(line) {
                Ok(text) => return Ok(Some((text, (input, replies)))),
                Err(invalid) => String::from_utf8_lossy(invalid.as_bytes()).into_owned(),
            };
            match not_utf8_reply(&invalid) {
                Some(reply) => {
                    let _ = replies.send(reply);
                }
                None => return Ok(Some((format!("{NOT_UTF8}{invalid}"), (input, replies)))),
            }
        }
    })
}

/// The `-32700` answer to a request that is not UTF-8 but whose id survived the damage.
fn not_utf8_reply(lossy: &str) -> Option<String> {
    let frame: Value = serde_json::from_str(lossy).ok()?;
    let id = frame.get("id").filter(|id| id.is_string() || id.is_u64() || id.is_i64())?;
    frame.get("method")?;
    let reply = json!({"jsonrpc": "2.0", "id": id, "error": {
        "code": -32700, "message": "Parse error", "data": {"reason": "the request is not valid UTF-8"},
    }});
    Some(reply.to_string())
}

/// The SDK's outgoing side: each frame is queued for the writer thread.
fn frame_sink(frames: mpsc::Sender<String>) -> impl Sink<String, Error = io::Error> + Send {
    futures::sink::unfold(frames, |frames, frame: String| async move {
        frames.send(frame).map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
        Ok(frames)
    })
}

/// The thread that writes frames to stdout.
pub struct StdoutWriter {
    done: mpsc::Receiver<()>,
}

impl StdoutWriter {
    /// Starts the writer on `output`: frames sent on the returned channel are written in
    /// order, one line each. Sending fails once the output is gone.
    pub fn spawn(output: impl Write + Send + 'static) -> (Self, mpsc::Sender<String>) {
        let (frames, queued) = mpsc::channel::<String>();
        let (done_tx, done) = mpsc::channel();
        thread::Builder::new()
            .name("acp-stdout".into())
            .spawn(move || {
                // `write_batches` owns the queue: once `done` is sent, sending fails.
                if let Err(error) = write_batches(queued, output) {
                    tracing::debug!(target: "zcode_acp::acp", %error, "stdout closed");
                }
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

fn write_batches(queued: mpsc::Receiver<String>, mut output: impl Write) -> io::Result<()> {
    let mut batch = Vec::with_capacity(64 * 1024);
    while let Ok(frame) = queued.recv() {
        batch.clear();
        push_line(&mut batch, frame);
        while batch.len() < MAX_BATCH {
            match queued.try_recv() {
                Ok(frame) => push_line(&mut batch, frame),
                Err(_) => break,
            }
        }
        output.write_all(&batch)?;
        output.flush()?;
    }
    Ok(())
}

fn push_line(batch: &mut Vec<u8>, frame: String) {
    batch.extend_from_slice(frame.as_bytes());
    batch.push(b'\n');
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use futures::{SinkExt, StreamExt};

    use super::*;

    #[tokio::test]
    async fn lines_that_are_not_utf8_are_never_json_or_are_answered_here() {
        let input: &[u8] = b"{\"a\":1}\r\n{\"b\":\"\xff\"}\n\xc3\x28\n\
            {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"\xfe\"}\nlast";
        let (replies, replied) = mpsc::channel();
        let lines: Vec<String> = stdin_lines(input, replies).map(Result::unwrap).collect().await;
        assert_eq!(
            lines,
            ["{\"a\":1}", "\u{FFFD}{\"b\":\"\u{FFFD}\"}", "\u{FFFD}\u{FFFD}(", "last"]
        );
        for line in &lines[1..3] {
            assert!(serde_json::from_str::<Value>(line).is_err(), "{line}");
        }
        let reply: Value = serde_json::from_str(&replied.recv().unwrap()).unwrap();
        assert_eq!((&reply["id"], &reply["error"]["code"]), (&json!(7), &json!(-32700)));
        assert!(replied.try_recv().is_err(), "one reply");
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
        let (writer, frames) = StdoutWriter::spawn(output.clone());
        let mut sink = Box::pin(frame_sink(frames));
        for n in 0..10_000 {
            sink.send(format!("{{\"n\":{n}}}")).await.unwrap();
        }
        drop(sink);
        writer.finish(Duration::from_secs(10));
        let written = String::from_utf8(output.0.lock().unwrap().clone()).unwrap();
        let expected: String = (0..10_000).map(|n| format!("{{\"n\":{n}}}\n")).collect();
        assert_eq!(written, expected);
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
        let (writer, frames) = StdoutWriter::spawn(Closed);
        let mut sink = Box::pin(frame_sink(frames));
        let _ = sink.send("first".into()).await; // may be queued before the writer fails
        writer.finish(Duration::from_secs(10));
        let error = sink.send("second".into()).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::BrokenPipe);
    }
}
