//! Replaying a trace through a [`Mapper`]: every call is performed in order, and its result is
//! compared with the line's `expect` in the readable form of both (so key order, spacing and
//! the way an expectation spells its JSON never matter).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::diff::{diff, pretty};
use crate::format::{Call, Line, Outcome, parse_line, write_line};
use zcode_contract::{Mapper, MapperConnection, MapperSession};

/// At most this many mismatches are printed.
const SHOWN_MISMATCHES: usize = 5;

/// The outcome of a replay.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Call lines performed.
    pub performed: usize,
    /// Lines with an expectation that matched.
    pub matched: usize,
    pub mismatches: Vec<Mismatch>,
    /// A line that could not be parsed or performed; the replay stopped there.
    pub error: Option<TraceError>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// 1-based line number in the trace.
    pub line: usize,
    pub call: String,
    /// Line-by-line diff of the expected (`-`) and actual (`+`) pretty-printed JSON.
    pub diff: String,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("trace line {line}: {message}")]
pub struct TraceError {
    pub line: usize,
    pub message: String,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.error.is_none() && self.mismatches.is_empty()
    }

    /// 0 when everything matched, 1 on mismatches, 2 when the trace itself is broken.
    pub fn exit_code(&self) -> i32 {
        match (&self.error, self.mismatches.is_empty()) {
            (Some(_), _) => 2,
            (None, false) => 1,
            (None, true) => 0,
        }
    }

    /// The report as `zcode-acp mapper test` prints it.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for mismatch in self.mismatches.iter().take(SHOWN_MISMATCHES) {
            let _ = writeln!(out, "mismatch at trace line {}: {}", mismatch.line, mismatch.call);
            out.push_str(&mismatch.diff);
        }
        if self.mismatches.len() > SHOWN_MISMATCHES {
            let _ = writeln!(
                out,
                "... and {} more mismatching lines",
                self.mismatches.len() - SHOWN_MISMATCHES
            );
        }
        if let Some(error) = &self.error {
            let _ = writeln!(out, "golden ERROR: {error}");
        } else if self.mismatches.is_empty() {
            let _ = writeln!(out, "golden OK: {} lines match", self.matched);
        } else {
            let checked = self.matched + self.mismatches.len();
            let _ = writeln!(
                out,
                "golden FAILED: {} of {checked} checked lines differ",
                self.mismatches.len()
            );
        }
        out
    }
}

/// The traces (`*.jsonl`) in `dir`, sorted: a mapper crate's `traces/` folder.
pub fn trace_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "jsonl") {
            paths.push(path);
        }
    }
    paths.sort();
    Ok(paths)
}

/// [`bless`]es every trace in `dir` in place, for the lines that already have an `expect`.
pub fn bless_files(mapper: &dyn Mapper, dir: &Path) -> Result<(), String> {
    for path in trace_files(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let failed = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        let text = std::fs::read_to_string(&path).map_err(|e| failed(&e))?;
        let blessed = bless(mapper, &text, BlessScope::Existing).map_err(|e| failed(&e))?;
        std::fs::write(&path, blessed).map_err(|e| failed(&e))?;
    }
    Ok(())
}

/// Replays every trace in `dir` through `mapper`: how many there are, or what failed (a
/// mismatch, or a trace that checks nothing), trace by trace.
pub fn replay_files(mapper: &dyn Mapper, dir: &Path) -> Result<usize, String> {
    let paths = trace_files(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut failed = String::new();
    for path in &paths {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let report = replay(mapper, &text);
        if !report.passed() {
            failed += &format!("{}:\n{}\n", path.display(), report.render());
        } else if report.matched == 0 {
            failed += &format!("{} checks nothing\n", path.display());
        }
    }
    if failed.is_empty() { Ok(paths.len()) } else { Err(failed) }
}

/// A mapper crate's `bless` test: [`bless_files`] when `ZCODE_BLESS=1` says the rewrite is
/// meant, an error otherwise.
pub fn bless_files_if_asked(mapper: &dyn Mapper, dir: &Path) -> Result<(), String> {
    if std::env::var("ZCODE_BLESS").as_deref() != Ok("1") {
        return Err("set ZCODE_BLESS=1 to rewrite traces".to_string());
    }
    bless_files(mapper, dir)
}

/// Replays `trace_text` through `mapper` and compares every `expect`.
pub fn replay(mapper: &dyn Mapper, trace_text: &str) -> Report {
    let mut report = Report::default();
    let mut replayer = Replayer::new(mapper);
    for (index, raw) in trace_text.lines().enumerate() {
        let number = index + 1;
        let Some(line) = parse_line(raw) else { continue };
        let checked = line.and_then(|line| {
            let actual = replayer.perform(&line.call)?;
            let expected = expected_value(&line).map_err(|e| format!("bad expect: {e}"))?;
            Ok((line.call, actual, expected))
        });
        let (call, actual, expected) = match checked {
            Ok(checked) => checked,
            Err(message) => {
                report.error = Some(TraceError { line: number, message });
                return report;
            }
        };
        report.performed += 1;
        let expected = match expected {
            Some(expected) => expected,
            // Creating a connection or session has no result; its failure is a mismatch
            // unless expected.
            None if call.creates() && actual != Outcome::Created => Outcome::Created.to_value(),
            None => continue,
        };
        let actual = actual.to_value();
        if expected == actual {
            report.matched += 1;
        } else {
            report.mismatches.push(Mismatch {
                line: number,
                call: call.name().to_string(),
                diff: diff(&pretty(&expected), &pretty(&actual)),
            });
        }
    }
    report
}

/// The expectation of a line in the readable form results are compared in.
fn expected_value(line: &Line) -> Result<Option<Value>, String> {
    match &line.expect {
        Some(expect) => Outcome::from_value(&line.call, expect).map(|o| Some(o.to_value())),
        None => Ok(None),
    }
}

/// Which lines [`bless`] writes expectations for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlessScope {
    /// Every line that produces a result.
    All,
    /// Only lines that already have an `expect` (any value, `null` included): setup lines
    /// without one stay unchecked.
    Existing,
}

/// Fills `expect` with what the mapper actually returns; call lines are written again in the
/// trace form (comments and blank lines are kept as they are). The output must still be
/// reviewed: blessing records behaviour, it does not judge it.
pub fn bless(
    mapper: &dyn Mapper,
    trace_text: &str,
    scope: BlessScope,
) -> Result<String, TraceError> {
    let mut replayer = Replayer::new(mapper);
    let mut out = String::new();
    for (index, raw) in trace_text.lines().enumerate() {
        let Some(line) = parse_line(raw) else {
            out.push_str(raw);
            out.push('\n');
            continue;
        };
        let fail = |message| TraceError { line: index + 1, message };
        let line = line.map_err(fail)?;
        let actual = replayer.perform(&line.call).map_err(fail)?;
        let wanted = scope == BlessScope::All || line.expect.is_some();
        let expect = match actual {
            Outcome::Created => None,
            actual if wanted || line.call.creates() => Some(actual.to_value()),
            _ => None,
        };
        out.push_str(&write_line(&line.call, expect.as_ref()));
        out.push('\n');
    }
    Ok(out)
}

// ----- performing calls ----------------------------------------------------------------------

struct Replayer<'a> {
    mapper: &'a dyn Mapper,
    connection: Option<Box<dyn MapperConnection>>,
    sessions: HashMap<String, Box<dyn MapperSession>>,
}

impl<'a> Replayer<'a> {
    fn new(mapper: &'a dyn Mapper) -> Self {
        Self { mapper, connection: None, sessions: HashMap::new() }
    }

    /// The connection, created on first use when the trace has no `connection.new` line.
    fn connection(&mut self) -> Result<&mut dyn MapperConnection, String> {
        if self.connection.is_none() {
            let created = self.mapper.connection();
            self.connection = Some(created.map_err(|f| format!("connection.new failed: {f}"))?);
        }
        Ok(self.connection.as_deref_mut().expect("just created"))
    }

    fn session(&mut self, name: &str) -> Result<&mut dyn MapperSession, String> {
        match self.sessions.get_mut(name) {
            Some(session) => Ok(session.as_mut()),
            None => Err(format!("no session named `{name}` (add a session.new line)")),
        }
    }

    /// Performs one call. An error is a trace that cannot be performed (a session it never
    /// created), not a mapper failure: those are outcomes.
    fn perform(&mut self, call: &Call) -> Result<Outcome, String> {
        Ok(match call {
            Call::ConnectionNew => match self.mapper.connection() {
                Ok(connection) => {
                    self.connection = Some(connection);
                    Outcome::Created
                }
                Err(fault) => Outcome::Fault(fault),
            },
            Call::ConnectionPush { bytes } => self.connection()?.push(bytes).into(),
            Call::ConnectionFinish => self.connection()?.finish().into(),
            Call::ConnectionStart { op_id, op, first_request_id } => {
                self.connection()?.start(*op_id, op, *first_request_id).into()
            }
            Call::ConnectionResume { op_id, reply, first_request_id } => {
                self.connection()?.resume(*op_id, reply.as_ref(), *first_request_id).into()
            }
            Call::ConnectionIdentity => self.connection()?.identity().into(),
            Call::SessionNew { name, init } => match self.mapper.session(init) {
                Ok(session) => {
                    self.sessions.insert(name.clone(), session);
                    Outcome::Created
                }
                Err(fault) => Outcome::Fault(fault),
            },
            Call::SessionStart { name, op_id, op, first_request_id } => {
                self.session(name)?.start(*op_id, op, *first_request_id).into()
            }
            Call::SessionResume { name, op_id, reply, first_request_id } => {
                self.session(name)?.resume(*op_id, reply.as_ref(), *first_request_id).into()
            }
            Call::SessionMap { name, inputs } => self.session(name)?.map(inputs.clone()).into(),
            Call::SessionIssue { name, first_request_id } => {
                self.session(name)?.issue(*first_request_id).into()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use zcode_contract::{
        Action, ConnectionOp, Contract, Effects, ErrorKind, Inbound, Interaction,
        InteractionRequest, LaunchPlan, MapperError, MapperFault, NativeData, NativeReply,
        NativeRequest, NativeWrite, OpResult, Operations, Outgoing, PermissionRequest, ReplyBody,
        SessionInit, SessionInput, SessionOp, Step, StopReason, Terminal, VerifiedInstall,
        VersionProbe,
    };

    /// A tiny mapper: echoes pushes, answers ops in one request, reports an identity, maps
    /// events to updates (or a fault for `trap`), and issues one request when asked.
    struct Echo {
        contract: Contract,
    }

    impl Echo {
        fn new() -> Self {
            let contract = Contract {
                facts: Default::default(),
                protocol_id: "echo".into(),
                description: String::new(),
                layouts: vec![],
                releases: vec![],
                cli_version_probe: VersionProbe { args: vec![], env: vec![] },
                credentials_file: String::new(),
                credential_sources: vec![],
                offers: vec![],
            };
            Self { contract }
        }
    }

    struct EchoConnection;
    struct EchoSession(Mutex<u32>);

    impl Mapper for Echo {
        fn source(&self) -> &str {
            "test"
        }
        fn contract(&self) -> &Contract {
            &self.contract
        }
        fn launch_plan(&self, _: &VerifiedInstall) -> Result<LaunchPlan, MapperError> {
            Err(MapperError::new(ErrorKind::Unsupported, "no"))
        }
        fn auth_plan(
            &self,
            _: &VerifiedInstall,
            _: zcode_contract::AuthCommand,
        ) -> Result<LaunchPlan, MapperError> {
            Err(MapperError::new(ErrorKind::Unsupported, "no"))
        }
        fn connection(&self) -> Result<Box<dyn MapperConnection>, MapperFault> {
            Ok(Box::new(EchoConnection))
        }
        fn session(&self, init: &SessionInit) -> Result<Box<dyn MapperSession>, MapperFault> {
            if init.workspace == "/fail" {
                return Err(MapperFault("no sessions here".into()));
            }
            Ok(Box::new(EchoSession(Mutex::new(0))))
        }
    }

    impl Operations<ConnectionOp> for EchoConnection {
        fn start(&mut self, _: u64, op: &ConnectionOp, first: u64) -> Result<Step, MapperFault> {
            Ok(match op {
                ConnectionOp::Setup => {
                    Step::Done(Ok(OpResult { response: "{}".into(), updates: vec![] }))
                }
                _ => Step::Wait(Outgoing {
                    requests: vec![NativeRequest {
                        id: first,
                        bytes: format!("{{\"id\":{first}}}\n").into_bytes(),
                        label: "x".into(),
                        timeout_ms: 5,
                    }],
                    ..Outgoing::default()
                }),
            })
        }
        fn resume(
            &mut self,
            _: u64,
            reply: Option<&NativeReply>,
            _: u64,
        ) -> Result<Step, MapperFault> {
            Ok(Step::Done(match reply.map(|reply| &reply.body) {
                None => Ok(OpResult { response: "{\"none\":true}".into(), updates: vec![] }),
                Some(ReplyBody::Ok(data)) => Ok(OpResult {
                    response: data.as_text().unwrap_or("\"binary\"").to_string(),
                    updates: vec!["{\"b\":1,\"a\":2}".into()],
                }),
                Some(ReplyBody::Error(error)) => Err(error.clone()),
                Some(ReplyBody::Lost(reason)) => {
                    Err(MapperError::new(ErrorKind::Native, reason.clone()))
                }
            }))
        }
    }

    impl MapperConnection for EchoConnection {
        fn push(&mut self, bytes: &[u8]) -> Result<Vec<Inbound>, MapperError> {
            if bytes == b"bad" {
                return Err(MapperError::new(ErrorKind::Protocol, "bad frame"));
            }
            Ok(vec![
                Inbound::Ignored(format!("{} bytes", bytes.len())),
                Inbound::Write(NativeWrite::new("ack", vec![0xff, b'a'])),
            ])
        }
        fn finish(&mut self) -> Result<Vec<Inbound>, MapperError> {
            Ok(vec![Inbound::Ready])
        }
        fn identity(&mut self) -> Result<Option<String>, MapperFault> {
            Ok(Some("echo 1.0".into()))
        }
    }

    impl Operations<SessionOp> for EchoSession {
        fn start(&mut self, _: u64, op: &SessionOp, _: u64) -> Result<Step, MapperFault> {
            Ok(Step::Done(Ok(OpResult {
                response: format!("{{\"op\":\"{}\"}}", op.name()),
                updates: vec![],
            })))
        }
        fn resume(&mut self, _: u64, _: Option<&NativeReply>, _: u64) -> Result<Step, MapperFault> {
            Err(MapperFault("nothing to resume".into()))
        }
    }

    impl MapperSession for EchoSession {
        fn map(&mut self, inputs: Vec<SessionInput>) -> Result<Effects, MapperFault> {
            let mut effects = Effects::default();
            for input in &inputs {
                match input {
                    SessionInput::Event(NativeData::Text(text)) if text == "trap" => {
                        return Err(MapperFault("trapped".into()));
                    }
                    SessionInput::Event(NativeData::Text(text)) if text == "ask" => {
                        *self.0.lock().unwrap() += 1;
                        effects.requests += 1;
                    }
                    SessionInput::Event(NativeData::Text(text)) => {
                        effects.actions.push(Action::Update(text.clone()));
                    }
                    _ => effects.actions.push(Action::Ignore("other".into())),
                }
            }
            effects.actions.push(Action::Terminal(Terminal::Stop(StopReason::EndTurn)));
            effects.actions.push(Action::Interaction(Interaction {
                key: "k".into(),
                request: InteractionRequest::Permission(PermissionRequest {
                    request: "{\"x\":[1]}".into(),
                    deny_option: "no".into(),
                }),
            }));
            Ok(effects)
        }
        fn issue(&mut self, first: u64) -> Result<Outgoing, MapperFault> {
            let count = std::mem::take(&mut *self.0.lock().unwrap());
            let requests = (0..u64::from(count))
                .map(|i| NativeRequest {
                    id: first + i,
                    bytes: b"{\"resync\":true}\n".to_vec(),
                    label: "resync".into(),
                    timeout_ms: 0,
                })
                .collect();
            Ok(Outgoing { requests, ..Outgoing::default() })
        }
    }

    const TRACE: &str = r#"
# a comment, then a blank line

{"call":"connection.push","bytes":"abc","expect":[{"ignored":"3 bytes"},{"write":{"bytes":{"base64":"/2E="},"label":"ack"}}]}
{"call":"connection.push","bytes":{"id":1},"expect":[{"ignored":"9 bytes"},{"write":{"bytes":{"base64":"/2E="},"label":"ack"}}]}
{"call":"connection.push","bytes":"bad","expect":{"error":{"kind":"protocol","message":"bad frame"}}}
{"call":"connection.finish","expect":["ready"]}
{"call":"connection.identity","expect":"echo 1.0"}
{"call":"connection.start","opId":1,"op":{"probe":"/w"},"firstRequestId":4,"expect":{"wait":{"requests":[{"id":4,"bytes":{"id":4},"label":"x","timeout_ms":5}]}}}
{"call":"connection.resume","opId":1,"reply":{"id":4,"body":{"ok":{"text":{"z":[1,2]}}}},"firstRequestId":5,"expect":{"done":{"Ok":{"response":"{\"z\": [1, 2]}","updates":[{"a":2,"b":1}]}}}}
{"call":"connection.resume","opId":1,"reply":{"id":4,"body":{"error":{"kind":"native","message":"m","data":{"nativeCode":1}}}},"firstRequestId":5,"expect":{"done":{"Err":{"kind":"native","message":"m","data":"{\"nativeCode\":1}"}}}}
{"call":"connection.resume","opId":1,"firstRequestId":5,"expect":{"done":{"Ok":{"response":{"none":true}}}}}
{"call":"session.new","init":{"workspace":"/w","client":{"plan_operations":true,"form_elicitation":false}}}
{"call":"session.start","opId":2,"op":{"prompt":{"prompt":[]}},"firstRequestId":1,"expect":{"done":{"Ok":{"response":{"op":"prompt"}}}}}
{"call":"session.start","opId":3,"op":"cancel","firstRequestId":1}
{"call":"session.start","opId":4,"op":{"answer":{"key":"k","outcome":{"elicited":{"action":"decline"}}}},"firstRequestId":1,"expect":{"done":{"Ok":{"response":{"op":"answer"},"updates":[]}}}}
{"call":"session.resume","opId":4,"reply":{"id":1,"body":{"lost":"timeout"}},"firstRequestId":2,"expect":{"error":{"kind":"fault","message":"nothing to resume"}}}
{"call":"session.map","inputs":[{"event":{"text":{"sessionUpdate":"x"}}},{"event":{"binary":"AAE="}}],"expect":{"actions":[{"update":{"sessionUpdate":"x"}},{"ignore":"other"},{"terminal":{"stop":"end_turn"}},{"interaction":{"key":"k","request":{"permission":{"request":{"x":[1]},"deny_option":"no"}}}}]}}
{"call":"session.map","inputs":[{"event":{"text":"ask"}}],"expect":{"actions":[{"terminal":{"stop":"end_turn"}},{"interaction":{"key":"k","request":{"permission":{"request":{"x":[1]},"deny_option":"no"}}}}],"requests":1}}
{"call":"session.issue","firstRequestId":8,"expect":{"requests":[{"id":8,"bytes":{"resync":true},"label":"resync","timeout_ms":0}]}}
{"call":"session.map","inputs":[{"event":{"text":"trap"}}],"expect":{"error":{"kind":"fault","message":"trapped"}}}
"#;

    #[test]
    fn replays_a_matching_trace() {
        let report = replay(&Echo::new(), TRACE);
        assert_eq!(report.error, None);
        assert_eq!(report.mismatches, vec![]);
        assert_eq!((report.performed, report.matched), (18, 16));
        assert_eq!(report.render(), "golden OK: 16 lines match\n");
        assert_eq!(report.exit_code(), 0);
    }

    #[test]
    fn shows_a_line_diff_for_a_mismatch() {
        let trace = TRACE.replacen(
            r#"{"terminal":{"stop":"end_turn"}}"#,
            r#"{"terminal":{"stop":"cancelled"}}"#,
            1,
        );
        let report = replay(&Echo::new(), &trace);
        assert_eq!(report.mismatches.len(), 1);
        let mismatch = &report.mismatches[0];
        assert_eq!((mismatch.line, mismatch.call.as_str()), (18, "session.map"));
        assert!(mismatch.diff.contains("-         \"stop\": \"cancelled\""), "{}", mismatch.diff);
        assert!(mismatch.diff.contains("+         \"stop\": \"end_turn\""), "{}", mismatch.diff);
        assert!(mismatch.diff.contains("   {\n"), "unchanged lines are kept: {}", mismatch.diff);
        assert_eq!(report.exit_code(), 1);
        assert!(report.render().starts_with("mismatch at trace line 18: session.map\n"));
        assert!(report.render().ends_with("golden FAILED: 1 of 16 checked lines differ\n"));
    }

    #[test]
    fn compares_request_bytes_as_json_lines() {
        // Same JSON, other spacing: equal. Without the newline: different.
        let spaced = TRACE.replace(r#""bytes":{"id":4}"#, r#""bytes":"{ \"id\" : 4 }\n""#);
        assert!(replay(&Echo::new(), &spaced).passed());
        let unterminated = TRACE.replace(r#""bytes":{"id":4}"#, r#""bytes":"{\"id\":4}""#);
        assert_eq!(replay(&Echo::new(), &unterminated).mismatches.len(), 1);
    }

    #[test]
    fn stops_at_a_broken_line() {
        let report = replay(&Echo::new(), "{\"call\":\"connection.finish\"}\nnot json\n");
        assert_eq!(report.error.as_ref().map(|e| e.line), Some(2));
        assert_eq!(report.exit_code(), 2);
        let report = replay(
            &Echo::new(),
            "{\"call\":\"session.start\",\"opId\":1,\"op\":\"cancel\",\"firstRequestId\":1}\n",
        );
        assert_eq!(
            report.error.unwrap().message,
            "no session named `main` (add a session.new line)"
        );
        let report = replay(
            &Echo::new(),
            "{\"call\":\"connection.finish\",\"expect\":[{\"teleport\":1}]}\n",
        );
        let message = report.error.unwrap().message;
        assert!(message.starts_with("bad expect: unknown variant `teleport`"), "{message}");
        let report = replay(&Echo::new(), "{\"call\":\"dance\"}\n");
        assert!(report.error.unwrap().message.starts_with("unknown variant `dance`"));
    }

    #[test]
    fn reports_failed_session_creation() {
        let init = r#"{"call":"session.new","name":"x","init":{"workspace":"/fail"}}"#;
        let report = replay(&Echo::new(), init);
        assert_eq!(report.mismatches.len(), 1);
        let expected = format!(
            "{}\n",
            init.replace(
                "}}",
                r#"},"expect":{"error":{"kind":"fault","message":"no sessions here"}}}"#
            )
        );
        assert!(replay(&Echo::new(), &expected).passed());
    }

    #[test]
    fn blesses_traces_with_actual_results() {
        let stripped: String = TRACE
            .lines()
            .map(|line| match line.find(",\"expect\"") {
                Some(at) => format!("{}}}\n", &line[..at]),
                None => format!("{line}\n"),
            })
            .collect();
        let blessed = bless(&Echo::new(), &stripped, BlessScope::All).unwrap();
        assert!(blessed.starts_with("\n# a comment, then a blank line\n\n"));
        let report = replay(&Echo::new(), &blessed);
        assert!(report.passed(), "{}", report.render());
        // Every result-producing line now has an expectation (the cancel line too).
        assert_eq!(report.matched, 17);
        let cancel = blessed.lines().find(|l| l.contains("\"cancel\"")).unwrap();
        assert!(cancel.starts_with("{\"call\":\"session.start\",\"name\":\"main\",\"opId\":3,\"op\":\"cancel\",\"firstRequestId\":1,\"expect\":"), "{cancel}");
        // Only marked lines: the unmarked cancel line stays unchecked.
        let marked = stripped.replace(r#""bytes":"abc"}"#, r#""bytes":"abc","expect":null}"#);
        let blessed = bless(&Echo::new(), &marked, BlessScope::Existing).unwrap();
        let report = replay(&Echo::new(), &blessed);
        assert!(report.passed(), "{}", report.render());
        assert_eq!(report.matched, 1);
        assert!(
            blessed.contains(
                r#""bytes":"abc","expect":[{"ignored":"3 bytes"},{"write":{"bytes":{"base64":"/2E="},"label":"ack"}}]}"#
            ),
            "{blessed}"
        );
        // Blessing twice changes nothing.
        assert_eq!(bless(&Echo::new(), &blessed, BlessScope::Existing).unwrap(), blessed);
    }
}
