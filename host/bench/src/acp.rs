//! A minimal ACP client for benchmarks: JSON-RPC over a child's stdio, with a fast path that
//! counts streamed message chunks without parsing them.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};

use memchr::memmem;
use serde_json::{Value, json};

const CHUNK_MARK: &[u8] = b"\"agent_message_chunk\"";
const UPDATE_MARK: &[u8] = b"\"session/update\"";
const TEXT_MARK: &[u8] = b"\"text\":\"";

/// What a client received of a streamed turn.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Received {
    /// `agent_message_chunk` frames.
    pub chunks: u64,
    /// Bytes of their text as written on the wire (JSON-escaped; the benchmarks stream
    /// `lorem ipsum `, which has nothing to escape).
    pub text_bytes: u64,
}

/// How the client reads: as fast as it can, or slowly (a pause after every `every` bytes).
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    pub every: usize,
    pub pause: std::time::Duration,
}

/// A reader that sleeps `pace.pause` after every `pace.every` bytes it hands on.
struct Paced<R> {
    inner: R,
    pace: Option<Pace>,
    since_pause: usize,
}

impl<R: Read> Read for Paced<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let Some(pace) = self.pace else { return self.inner.read(buf) };
        if self.since_pause >= pace.every {
            std::thread::sleep(pace.pause);
            self.since_pause = 0;
        }
        let room = (pace.every - self.since_pause).min(buf.len());
        let read = self.inner.read(&mut buf[..room])?;
        self.since_pause += read;
        Ok(read)
    }
}

/// Counts `agent_message_chunk` frames in a stream of ACP lines.
pub struct FrameReader<R> {
    reader: BufReader<Paced<R>>,
    line: Vec<u8>,
    chunk: memmem::Finder<'static>,
    update: memmem::Finder<'static>,
    text: memmem::Finder<'static>,
}

impl<R: Read> FrameReader<R> {
    pub fn new(inner: R) -> Self {
        Self::paced(inner, None)
    }

    pub fn paced(inner: R, pace: Option<Pace>) -> Self {
        let capacity = pace.map_or(1 << 20, |pace| pace.every.min(1 << 20));
        Self {
            reader: BufReader::with_capacity(capacity, Paced { inner, pace, since_pause: 0 }),
            line: Vec::with_capacity(4096),
            chunk: memmem::Finder::new(CHUNK_MARK),
            update: memmem::Finder::new(UPDATE_MARK),
            text: memmem::Finder::new(TEXT_MARK),
        }
    }

    /// The length of the chunk's text as written (up to its closing unescaped quote).
    fn chunk_text_bytes(&self) -> u64 {
        let line = &self.line;
        let Some(start) = self.text.find(line).map(|at| at + TEXT_MARK.len()) else { return 0 };
        let mut index = start;
        while index < line.len() {
            match line[index] {
                b'\\' => index += 2,
                b'"' => break,
                _ => index += 1,
            }
        }
        (index.min(line.len()) - start) as u64
    }

    /// Reads the next line and says what it is; `None` at end of stream. The line itself
    /// (without `\n`) is then in [`Self::line`].
    fn next_line(&mut self) -> Result<Option<LineKind>, String> {
        self.line.clear();
        let read = self.reader.read_until(b'\n', &mut self.line).map_err(|e| e.to_string())?;
        if read == 0 {
            return Ok(None);
        }
        if self.line.last() == Some(&b'\n') {
            self.line.pop();
        }
        Ok(Some(if self.chunk.find(&self.line).is_some() {
            LineKind::Chunk
        } else if self.update.find(&self.line).is_some() {
            LineKind::OtherUpdate
        } else {
            LineKind::Other
        }))
    }

    fn line(&self) -> &[u8] {
        &self.line
    }

    /// Reads to the end, counting message chunks.
    pub fn count_to_end(&mut self) -> Result<Received, String> {
        let mut received = Received::default();
        while let Some(kind) = self.next_line()? {
            if kind == LineKind::Chunk {
                received.chunks += 1;
                received.text_bytes += self.chunk_text_bytes();
            }
        }
        Ok(received)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum LineKind {
    /// A `session/update` carrying an `agent_message_chunk`.
    Chunk,
    OtherUpdate,
    /// Anything else: parsed.
    Other,
}

/// A running agent and the client end of its stdio.
pub struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    frames: FrameReader<std::process::ChildStdout>,
    next_id: u64,
}

impl Agent {
    pub fn spawn(command: Command) -> Result<Self, String> {
        Self::spawn_paced(command, None)
    }

    /// An agent whose stdout this client reads at `pace` (`None`: as fast as it can).
    pub fn spawn_paced(mut command: Command, pace: Option<Pace>) -> Result<Self, String> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start zcode-acp: {e}"))?;
        let stdout = child.stdout.take().expect("stdout piped");
        let stdin = child.stdin.take();
        Ok(Self { child, stdin, frames: FrameReader::paced(stdout, pace), next_id: 1 })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn send(&mut self, frame: &Value) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        let mut line = frame.to_string().into_bytes();
        line.push(b'\n');
        stdin.write_all(&line).and_then(|()| stdin.flush()).map_err(|e| e.to_string())
    }

    pub fn send_request(&mut self, method: &str, params: Value) -> Result<u64, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        Ok(id)
    }

    /// Reads until the response to `id`: counts message chunks, writes every line to
    /// `capture` if given, and allows every permission request.
    pub fn read_until_response(
        &mut self,
        id: u64,
        mut capture: Option<&mut dyn Write>,
    ) -> Result<(Value, Received), String> {
        let mut received = Received::default();
        loop {
            let Some(kind) = self.frames.next_line()? else {
                return Err(format!("zcode-acp closed its stdout before answering request {id}"));
            };
            let line = self.frames.line();
            if let Some(capture) = capture.as_mut() {
                capture
                    .write_all(line)
                    .and_then(|()| capture.write_all(b"\n"))
                    .map_err(|e| e.to_string())?;
            }
            match kind {
                LineKind::Chunk => {
                    received.chunks += 1;
                    received.text_bytes += self.frames.chunk_text_bytes();
                    continue;
                }
                LineKind::OtherUpdate => continue,
                LineKind::Other => {}
            }
            let frame: Value =
                serde_json::from_slice(line).map_err(|e| format!("not JSON: {e}"))?;
            if frame["method"] == "session/request_permission" {
                let allow = frame["params"]["options"]
                    .as_array()
                    .and_then(|options| options.iter().find(|o| o["kind"] == "allow_once"))
                    .map(|option| option["optionId"].clone())
                    .ok_or("a permission request without an allow_once option")?;
                let outcome = json!({"outcome": {"outcome": "selected", "optionId": allow}});
                self.send(&json!({"jsonrpc": "2.0", "id": frame["id"], "result": outcome}))?;
            } else if frame.get("method").is_none() && frame["id"] == id {
                if let Some(error) = frame.get("error") {
                    return Err(format!("request {id} failed: {error}"));
                }
                return Ok((frame["result"].clone(), received));
            }
        }
    }

    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.send_request(method, params)?;
        self.read_until_response(id, None).map(|(result, _)| result)
    }

    pub fn initialize(&mut self) -> Result<Value, String> {
        self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {},
                   "clientInfo": {"name": "zcode-acp-bench", "version": "0"}}),
        )
    }

    pub fn new_session(&mut self, cwd: &std::path::Path) -> Result<String, String> {
        let result = self.call("session/new", json!({"cwd": cwd, "mcpServers": []}))?;
        result["sessionId"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| format!("no session id: {result}"))
    }

    pub fn prompt_params(session: &str, text: &str) -> Value {
        json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]})
    }

    /// Closes stdin and waits for the agent to exit.
    pub fn finish(mut self) -> Result<ExitStatus, String> {
        drop(self.stdin.take());
        self.child.wait().map_err(|e| e.to_string())
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            drop(self.stdin.take());
            let _ = self.child.wait();
        }
    }
}
