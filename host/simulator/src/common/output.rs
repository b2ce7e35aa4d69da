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
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Producers pause above this many queued bytes (keeps cancel responsive on huge streams).
pub const BACKPRESSURE_BYTES: usize = 8 * 1024 * 1024;

/// The writer keeps its buffer between writes up to this size.
const KEPT_CAPACITY: usize = 4 * 1024 * 1024;

/// What producers have enqueued and the writer has not yet taken.
#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    exit: Option<(i32, Option<String>)>,
    /// The [`Output`] is gone: the writer ends once it has written the rest.
    closed: bool,
    /// The writer waits for bytes: only then does a producer wake it. A condition variable's
    /// notify is a system call whether anyone waits or not, and a streaming turn enqueues a
    /// frame per delta while the writer is mostly busy writing the last ones.
    writer_waiting: bool,
}

/// The queue is one buffer that producers append to and the writer swaps with its own, so the
/// bytes of a frame are copied once and no allocation crosses threads: handing each frame's
/// own buffer to the writer, which freed it, made every frame a free into another thread's
/// glibc arena, where `malloc` and `free` were the largest share of the Desktop simulator's CPU
/// per delta (docs/performance.md, issue 27).
struct Shared {
    pending: Mutex<Pending>,
    ready: Condvar,
    queued_bytes: AtomicUsize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().expect("output queue lock")
    }
}

pub struct Output {
    shared: Arc<Shared>,
}

impl Output {
    /// Starts the writer thread on this process's stdout.
    pub fn start(split_writes: bool) -> Arc<Output> {
        let shared = Arc::new(Shared {
            pending: Mutex::default(),
            ready: Condvar::new(),
            queued_bytes: AtomicUsize::new(0),
        });
        let writer = shared.clone();
        std::thread::Builder::new()
            .name("zcode-sim-stdout".into())
            .spawn(move || write_loop(&writer, split_writes))
            .expect("spawn stdout writer");
        Arc::new(Output { shared })
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

    /// Enqueues raw bytes (already framed, possibly deliberately broken). Nothing is enqueued
    /// once an exit was asked for.
    pub fn bytes(&self, bytes: Vec<u8>) {
        self.write(|queue| queue.extend_from_slice(&bytes));
    }

    /// Enqueues what `write` appends to the queue, as one piece: a producer that puts a line
    /// together from parts writes them in place, so its bytes are copied once. Nothing is
    /// enqueued once an exit was asked for.
    pub fn write(&self, write: impl FnOnce(&mut Vec<u8>)) {
        let mut pending = self.shared.lock();
        if pending.exit.is_some() {
            return;
        }
        let before = pending.bytes.len();
        write(&mut pending.bytes);
        let added = pending.bytes.len() - before;
        self.shared.queued_bytes.fetch_add(added, Ordering::SeqCst);
        let wake = pending.writer_waiting;
        drop(pending);
        if wake {
            self.shared.ready.notify_one();
        }
    }

    /// Flushes everything enqueued so far, prints `stderr` (if any) and exits the process.
    pub fn exit(&self, code: i32, stderr: Option<String>) {
        let mut pending = self.shared.lock();
        pending.exit.get_or_insert((code, stderr));
        drop(pending);
        self.shared.ready.notify_one();
    }

    pub fn queued_bytes(&self) -> usize {
        self.shared.queued_bytes.load(Ordering::SeqCst)
    }

    /// Waits until the writer has caught up below [`BACKPRESSURE_BYTES`].
    pub async fn drain_below_limit(&self) {
        while self.queued_bytes() > BACKPRESSURE_BYTES {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.ready.notify_one();
    }
}

fn write_loop(shared: &Shared, split_writes: bool) {
    let mut taken = Vec::new();
    loop {
        let (exit, closed) = {
            let mut pending = shared.lock();
            while pending.bytes.is_empty() && pending.exit.is_none() && !pending.closed {
                pending.writer_waiting = true;
                pending = shared.ready.wait(pending).expect("output queue lock");
                pending.writer_waiting = false;
            }
            // The bytes enqueued before an exit are taken with it, so they are written first.
            std::mem::swap(&mut pending.bytes, &mut taken);
            (pending.exit.take(), pending.closed)
        };
        // Locked for each write only: a thread that holds stdout's lock while it waits stops
        // everyone else's prints (a test harness's among them).
        let mut stdout = std::io::stdout().lock();
        let written = if split_writes {
            taken.iter().try_for_each(|byte| {
                stdout.write_all(std::slice::from_ref(byte)).and_then(|()| stdout.flush())
            })
        } else {
            stdout.write_all(&taken).and_then(|()| stdout.flush())
        };
        if written.is_err() {
            // The reader is gone; nobody can receive anything any more.
            std::process::exit(1);
        }
        shared.queued_bytes.fetch_sub(taken.len(), Ordering::SeqCst);
        taken.clear();
        if taken.capacity() > KEPT_CAPACITY {
            // An oversized frame's buffer is not kept for ever.
            taken = Vec::new();
        }
        if let Some((code, stderr)) = exit {
            if let Some(text) = stderr {
                eprintln!("{text}");
            }
            std::process::exit(code);
        }
        if closed {
            return;
        }
    }
}
