//! The single stdout writer every generation writes through.
//!
//! Every frame goes through one queue drained by one thread, so frames never interleave and
//! the order in which producers enqueue is the order on the wire. Ending the process also goes
//! through the queue: whatever was enqueued before an exit request is flushed first, nothing
//! enqueued after it is written. With `split_writes` (the Services Server's `split-writes`
//! fault) every byte is written and flushed on its own, so a reader sees frames cut at every
//! possible place.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex};

/// Producers pause above this many queued bytes (keeps cancel responsive on huge streams).
pub const BACKPRESSURE_BYTES: usize = 8 * 1024 * 1024;

enum OutMessage {
    Bytes(Vec<u8>),
    Exit { code: i32, stderr: Option<String> },
}

pub struct Output {
    queue: Mutex<Sender<OutMessage>>,
    queued_bytes: Arc<AtomicUsize>,
}

impl Output {
    /// Starts the writer thread on this process's stdout.
    pub fn start(split_writes: bool) -> Arc<Output> {
        let (sender, receiver) = channel();
        let queued_bytes = Arc::new(AtomicUsize::new(0));
        let counter = queued_bytes.clone();
        std::thread::Builder::new()
            .name("zcode-sim-stdout".into())
            .spawn(move || write_loop(receiver, &counter, split_writes))
            .expect("spawn stdout writer");
        Arc::new(Output { queue: Mutex::new(sender), queued_bytes })
    }

    /// Enqueues one JSON frame followed by a newline.
    pub fn frame(&self, value: &serde_json::Value) {
        self.frames(std::slice::from_ref(value));
    }

    /// Enqueues JSON frames, each followed by a newline, as one write: the same bytes as a
    /// [`Output::frame`] each, at one hand-off to the writer.
    pub fn frames(&self, values: &[serde_json::Value]) {
        let mut bytes = Vec::with_capacity(256 * values.len());
        for value in values {
            serde_json::to_writer(&mut bytes, value).expect("JSON values always serialize");
            bytes.push(b'\n');
        }
        self.bytes(bytes);
    }

    /// Enqueues raw bytes (already framed, possibly deliberately broken).
    pub fn bytes(&self, bytes: Vec<u8>) {
        self.queued_bytes.fetch_add(bytes.len(), Ordering::SeqCst);
        self.send(OutMessage::Bytes(bytes));
    }

    /// Flushes everything enqueued so far, prints `stderr` (if any) and exits the process.
    pub fn exit(&self, code: i32, stderr: Option<String>) {
        self.send(OutMessage::Exit { code, stderr });
    }

    pub fn queued_bytes(&self) -> usize {
        self.queued_bytes.load(Ordering::SeqCst)
    }

    /// Waits until the writer has caught up below [`BACKPRESSURE_BYTES`].
    pub async fn drain_below_limit(&self) {
        while self.queued_bytes() > BACKPRESSURE_BYTES {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }

    fn send(&self, message: OutMessage) {
        // The writer only stops by exiting the process, so a send cannot fail while we run.
        let _ = self.queue.lock().expect("output queue lock").send(message);
    }
}

fn write_loop(receiver: Receiver<OutMessage>, queued_bytes: &AtomicUsize, split_writes: bool) {
    let stdout = std::io::stdout();
    let mut writer = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    let mut next = receiver.recv().ok();
    while let Some(message) = next {
        match message {
            OutMessage::Bytes(bytes) => {
                let written = if split_writes {
                    bytes.iter().try_for_each(|byte| {
                        writer.write_all(std::slice::from_ref(byte)).and_then(|()| writer.flush())
                    })
                } else {
                    writer.write_all(&bytes)
                };
                if written.is_err() {
                    // The reader is gone; nobody can receive anything any more.
                    std::process::exit(1);
                }
                queued_bytes.fetch_sub(bytes.len(), Ordering::SeqCst);
            }
            OutMessage::Exit { code, stderr } => {
                let _ = writer.flush();
                if let Some(text) = stderr {
                    eprintln!("{text}");
                }
                std::process::exit(code);
            }
        }
        next = match receiver.try_recv() {
            Ok(message) => Some(message),
            Err(TryRecvError::Empty) => {
                if writer.flush().is_err() {
                    std::process::exit(1);
                }
                receiver.recv().ok()
            }
            Err(TryRecvError::Disconnected) => None,
        };
    }
    let _ = writer.flush();
}
