//! The server's single stdout writer. Every message goes through one queue drained by one
//! thread, so frames never interleave and enqueue order is wire order. Exiting goes through
//! the queue too: what was enqueued before is flushed, nothing after is written.
//!
//! With `split-writes` every byte is written and flushed on its own, so a reader sees frames
//! cut at every possible place.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::sync::{Arc, Mutex};

use super::ipc::message::encode_response;
use super::ipc::transport::encode_frame;
use super::ipc::value::RpcValue;

/// Producers of bulk output pause above this many queued bytes.
const BACKPRESSURE_BYTES: usize = 8 * 1024 * 1024;

enum Message {
    Bytes(Vec<u8>),
    Exit { code: i32, stderr: Option<String> },
}

pub struct ServerOutput {
    queue: Mutex<Sender<Message>>,
    queued: Arc<AtomicUsize>,
}

impl ServerOutput {
    pub fn start(split_writes: bool) -> Arc<ServerOutput> {
        let (sender, receiver) = channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let counter = queued.clone();
        std::thread::Builder::new()
            .name("zcode-sim-services-stdout".into())
            .spawn(move || write_loop(&receiver, &counter, split_writes))
            .expect("spawn stdout writer");
        Arc::new(ServerOutput { queue: Mutex::new(sender), queued })
    }

    /// Raw bytes (the hello line, or something deliberately broken).
    pub fn bytes(&self, bytes: Vec<u8>) {
        self.queued.fetch_add(bytes.len(), Ordering::SeqCst);
        self.send(Message::Bytes(bytes));
    }

    /// One channel message `[kind, id?]` + body in a Regular transport frame.
    pub fn message(&self, kind: i32, id: Option<i64>, body: &RpcValue) {
        self.bytes(encode_frame(&encode_response(kind, id, body)));
    }

    /// Flushes what was enqueued, prints `stderr` (if any) and exits.
    pub fn exit(&self, code: i32, stderr: Option<String>) {
        self.send(Message::Exit { code, stderr });
    }

    /// Waits until the writer has caught up below the backpressure limit.
    pub async fn drain_below_limit(&self) {
        while self.queued.load(Ordering::SeqCst) > BACKPRESSURE_BYTES {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }

    fn send(&self, message: Message) {
        // The writer only stops by exiting the process.
        let _ = self.queue.lock().expect("output queue lock").send(message);
    }
}

fn write_loop(receiver: &Receiver<Message>, queued: &AtomicUsize, split_writes: bool) {
    let stdout = std::io::stdout();
    let mut writer = std::io::BufWriter::with_capacity(1 << 20, stdout.lock());
    let mut next = receiver.recv().ok();
    while let Some(message) = next {
        match message {
            Message::Bytes(bytes) => {
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
                queued.fetch_sub(bytes.len(), Ordering::SeqCst);
            }
            Message::Exit { code, stderr } => {
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
