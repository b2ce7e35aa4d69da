//! One run of the scripted model inside a resident session, seen through both projections:
//! legacy `session/event`s (`turn.started`, `model.streaming`, `tool.updated`, ...,
//! `turn.completed` / `turn.failed`) and V4 rows and A-zone patches.
//!
//! The scenario comes from the shared scenario engine (`sim:<name>` triggers, scenario files);
//! a few app-server-only triggers (`extra.rs`) exercise requests only this protocol has.
//! Before each model request (turn start, and after every tool) the turn drains the guide
//! lane and, for an `account:*` model, asks the host for provider runtime headers.

mod ask;
mod extra;
mod tools;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};

use super::catalog::{self, StoredKey};
use super::delta_batch::{Delta, DeltaKind};
use super::fault::AppFault;
use super::messages::{self, AssistantInfo, Tokens};
use super::reverse::{ClientError, ClientRequest};
use super::schemas;
use super::server::{MALFORMED_LINE, Server, State};
use super::session::{Resident, TurnStart, with};
use super::store::Usage;
use super::wire;
use crate::common::clock::now_ms;
use crate::common::fault::FaultKind;
use crate::common::members::{member, member_mut};
use crate::common::scenario::{Action, Condition, Scenario, UsageOverride};
use crate::common::turn::{Halt, StepResult, TurnCounts, estimate_tokens, failed, title_from};
use crate::v4;
use crate::v4::publisher::{Batch, Publisher};
use crate::v4::turn::TurnRows;

/// The row a streaming text or reasoning part is appended to.
struct OpenRow {
    row_id: u64,
    started: u64,
}

struct Turn {
    server: Arc<Server>,
    start: TurnStart,
    workspace: PathBuf,
    assistant_id: String,
    /// The V4 rows of the turn; their response is the assistant message.
    rows: TurnRows,
    parts: Vec<Value>,
    open_row: Option<OpenRow>,
    last_outcome: Option<Condition>,
    output_chars: u64,
    reasoning_chars: u64,
    tool_calls: u64,
    model_requests: u64,
    usage_override: UsageOverride,
    context_before: u64,
    started_at: u64,
    turn_row: u64,
}

/// Runs the turn to its end, then the queued inputs it drains; spawned once the accepting
/// response is written.
pub async fn run(server: Arc<Server>, start: TurnStart) {
    let mut next = Some(start);
    while let Some(start) = next {
        next = run_one(server.clone(), start).await;
    }
}

async fn run_one(server: Arc<Server>, start: TurnStart) -> Option<TurnStart> {
    let (workspace, context_before) = {
        let state = server.state();
        let resident = state.sessions.get(&start.session_id)?;
        (PathBuf::from(resident.record.workspace_path()), resident.record.context_used)
    };
    let assistant_id = messages::new_id("msg");
    let rows = TurnRows { turn_id: start.turn_id.clone(), response_id: assistant_id.clone() };
    let mut turn = Turn {
        server,
        start,
        workspace,
        assistant_id,
        rows,
        parts: Vec::new(),
        open_row: None,
        last_outcome: None,
        output_chars: 0,
        reasoning_chars: 0,
        tool_calls: 0,
        model_requests: 0,
        usage_override: UsageOverride::default(),
        context_before,
        started_at: now_ms(),
        turn_row: 0,
    };
    let halt = turn.play().await.err().unwrap_or(Halt::Completed("success".into()));
    turn.finish(halt).await
}

impl Turn {
    async fn play(&mut self) -> StepResult {
        self.begin();
        let (extra, scenario) = self.scenario()?;
        self.fault_point("turn-start").await?;
        self.model_request().await?;
        if let Some(extra) = extra {
            self.play_extra(extra).await?;
        }
        for step in scenario.steps {
            if step.condition.is_some_and(|condition| self.last_outcome != Some(condition)) {
                continue;
            }
            self.start.stop.check()?;
            self.step(step.action).await?;
        }
        Ok(())
    }

    /// The turn's script: an app-server-only step and its follow-up, or a shared scenario.
    fn scenario(&self) -> Result<(Option<extra::Extra>, Scenario), Halt> {
        if self.server.options.scenario_file.is_none()
            && let Some((extra, follow_up)) = extra::select(&self.start.text, self.server.profile)
        {
            return Ok((Some(extra), follow_up));
        }
        crate::common::scenario::select(
            &self.start.text,
            &self.workspace,
            self.server.options.scenario_file.as_deref(),
        )
        .map(|scenario| (None, scenario))
        .map_err(|message| failed("ScenarioError", message))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.server.state()
    }

    fn session_id(&self) -> &str {
        &self.start.session_id
    }

    /// A `session/event` of this turn.
    fn event(&self, kind: &str, payload: Value) {
        let turn_id = self.start.turn_id.clone();
        self.state().event(self.session_id(), Some(&turn_id), kind, payload);
    }

    fn v4_patch(&self, keys: &[&str]) {
        self.state().v4_patch(self.session_id(), keys);
    }

    /// Rows of this turn (`v4::turn`), in one frame.
    fn v4_rows<R>(
        &self,
        write: impl FnOnce(&TurnRows, &mut Publisher, &mut Batch) -> R,
    ) -> Option<R> {
        self.state().v4_with(self.session_id(), |log, batch| write(&self.rows, log, batch))
    }

    /// Changes the resident session, if it is still resident.
    fn resident<R>(&self, change: impl FnOnce(&mut Resident) -> R) -> Option<R> {
        self.state().sessions.get_mut(self.session_id()).map(change)
    }

    fn begin(&mut self) {
        let text = self.start.text.clone();
        let title = {
            let mut state = self.state();
            let Some(resident) = state.sessions.get_mut(self.session_id()) else { return };
            // Turns are numbered from 0: the first turn's `turn.started` says `turnNumber: 0`
            // ("ZCode app-server Session Protocol" probe log, CLI 0.16.x, §7.2 and §11.4,
            // issue 25 [A]).
            let turn_number = resident.record.turn_count;
            resident.record.turn_count += 1;
            let title = resident.record.title.is_empty().then(|| title_from(&text));
            if let Some(title) = &title {
                resident.record.title = title.clone();
                resident.record.title_source = Some("first_input".into());
            }
            (title, turn_number)
        };
        let (title, turn_number) = title;
        if let Some(title) = title {
            let payload = json!({"previousTitle": "", "source": "first_input", "title": title});
            self.event("session.titleUpdated", payload);
            self.v4_patch(&["meta"]);
        }
        let foreground = {
            let state = self.state();
            state
                .sessions
                .get(self.session_id())
                .and_then(|resident| resident.turn.as_ref())
                .map(|turn| turn.foreground_execution_id.clone())
                .unwrap_or_default()
        };
        let mut started = json!({
            "turnNumber": turn_number, "input": text, "inputId": self.start.input_id,
            "executionKind": "agent", "messageId": self.start.message_id,
            "foregroundExecutionId": foreground, "executionStartedAt": self.started_at,
        });
        if let Some(command) = &self.start.command_id {
            started["intent"] = json!({"sourceCommandId": command});
        }
        self.event("turn.started", started);
        let header = json!({"origin": "userInput", "executionKind": "agent", "state": "running",
                            "startedAt": self.started_at});
        let input = json!({"origin": "realUser", "text": text});
        let (header_entity, input_entity) =
            (format!("{}:turn", self.start.turn_id), self.start.message_id.clone());
        let header_row = self.v4_rows(|rows, log, batch| {
            let header_row =
                log.append_row(batch, with(rows.row("turnHeader", header_entity), header));
            log.append_row(batch, with(rows.row("userInput", input_entity), input));
            header_row
        });
        self.turn_row = header_row.unwrap_or_default();
    }

    async fn step(&mut self, action: Action) -> StepResult {
        match action {
            Action::Text(chunks) => self.deltas("text", chunks).await,
            Action::Reasoning(chunks) => self.deltas("reasoning", chunks).await,
            Action::Stream { count, chunk } => {
                let chunks = (0..count).map(|_| chunk.clone()).collect();
                self.deltas("text", chunks).await
            }
            Action::Tool(call) => self.tool(*call).await,
            Action::Question(question) => self.question(question).await,
            Action::PlanApproval(plan) => self.plan_approval(plan).await,
            Action::Todos(todos) => {
                self.resident(|resident| resident.record.todos = todos);
                self.v4_patch(&["plan"]);
                Ok(())
            }
            Action::Title(title) => {
                let previous = {
                    let mut state = self.state();
                    let Some(resident) = state.sessions.get_mut(self.session_id()) else {
                        return Err(Halt::Frozen);
                    };
                    resident.record.title_source = Some("generated".into());
                    std::mem::replace(&mut resident.record.title, title.clone())
                };
                let payload =
                    json!({"previousTitle": previous, "source": "generated", "title": title});
                self.event("session.titleUpdated", payload);
                self.v4_patch(&["meta"]);
                Ok(())
            }
            Action::ProviderHeaders { .. } => self.provider_headers(true).await,
            Action::Sleep(duration) => self.start.stop.sleep(duration).await,
            Action::Stall => {
                self.start.stop.stopped().await;
                Err(Halt::Cancelled)
            }
            Action::Event(value) => {
                self.state().out.frame(&value);
                Ok(())
            }
            Action::SessionEvent { kind, payload } => {
                if kind == "checkpoint.created" {
                    let checkpoint = payload["checkpointId"].as_str().map(str::to_owned);
                    self.resident(|resident| resident.record.checkpoint_id = checkpoint);
                }
                self.event(&kind, payload);
                Ok(())
            }
            Action::Usage(usage) => {
                self.usage_override = usage;
                Ok(())
            }
            Action::End(result_type) => Err(Halt::Completed(result_type)),
            Action::Fail(message) => Err(failed("ModelError", message)),
            Action::Fault(kind) => self.scenario_fault(kind),
        }
    }

    // ── model output ──

    /// Streams text or reasoning deltas; the `stream` fault point sits in the middle.
    async fn deltas(&mut self, part: &'static str, chunks: Vec<String>) -> StepResult {
        let middle = chunks.len().saturating_sub(1) / 2;
        let kind = if part == "text" { DeltaKind::Text } else { DeltaKind::Reasoning };
        let row_kind = if part == "text" { "assistantText" } else { "reasoning" };
        let part_id = messages::new_id("prt");
        let row = (row_kind, part_id.clone());
        let row_id = self.v4_rows(|rows, log, batch| rows.open_text(log, batch, row, None));
        let row_id = row_id.unwrap_or_default();
        self.open_row = Some(OpenRow { row_id, started: now_ms() });
        if part == "reasoning" {
            // `reasoning_start` and `reasoning_end` never reach the legacy stream
            // (`shouldExposeSessionEventToProtocol`), but they end a batch of deltas.
            self.state().hidden_event(self.session_id());
        }
        for (index, chunk) in chunks.iter().enumerate() {
            self.start.stop.check()?;
            if index > 0
                && let Some(delay) = self.server.options.chunk_delay
            {
                self.start.stop.sleep(delay).await?;
            }
            // The chunk's event and V4 delta go out together (one array line, when arrays).
            // The segment's last chunk says `done: true`, the others `done: false` (probe log
            // [A] of issue 25, §7.2: "`done` marks the end of the stream, true on the last
            // chunk"; the live record [B], Q1).
            let delta =
                self.delta(kind, Some(&part_id), None, chunk, Some(index + 1 == chunks.len()));
            let session_id = self.session_id();
            self.state().batch(|state| {
                state.stream_delta(session_id, &delta);
                state
                    .v4_with(session_id, |log, batch| log.stream_row(batch, row_id, "text", chunk));
            });
            self.append_text(part, &part_id, chunk);
            if index == middle {
                self.fault_point("stream").await?;
            }
            if self.server.out.queued_bytes() > crate::common::output::BACKPRESSURE_BYTES {
                self.server.out.drain_below_limit().await;
            }
            // Other tasks get their turn once this one has used up its cooperative budget
            // (tokio's 128 units a poll), not after every delta: a `yield_now` per delta
            // parked the worker (an `epoll_wait`) and woke the other one (an `eventfd`
            // write) each time, about a fifth of the simulator's CPU per delta in a profile
            // of `sim:stream` on desktop-4.0.0 (docs/performance.md, issue 27). A stop is
            // still checked before every delta.
            tokio::task::coop::consume_budget().await;
        }
        if part == "reasoning" {
            // `reasoning_start` and `reasoning_end` never reach the legacy stream
            // (`shouldExposeSessionEventToProtocol`), but they end a batch of deltas.
            self.state().hidden_event(self.session_id());
        }
        self.close_row();
        Ok(())
    }

    /// A delta of this turn's assistant message: of part `part` (text, reasoning) or of tool
    /// call `call` (its input).
    fn delta<'a>(
        &'a self,
        kind: DeltaKind,
        part: Option<&'a str>,
        call: Option<&'a str>,
        text: &'a str,
        done: Option<bool>,
    ) -> Delta<'a> {
        Delta {
            kind,
            assistant_message_id: &self.assistant_id,
            part_id: part,
            tool_call_id: call,
            text,
            done,
            turn_id: &self.start.turn_id,
            at_ms: now_ms(),
        }
    }

    fn stream_event(&self, mut payload: Value) {
        payload["assistantMessageId"] = json!(self.assistant_id);
        self.event("model.streaming", payload);
    }

    fn close_row(&mut self) {
        if let Some(OpenRow { row_id, started }) = self.open_row.take() {
            self.v4_rows(|_, log, batch| v4::turn::close_text(log, batch, row_id, started));
        }
    }

    fn append_text(&mut self, part: &str, part_id: &str, delta: &str) {
        let chars = delta.chars().count() as u64;
        if part == "text" {
            self.output_chars += chars;
        } else {
            self.reasoning_chars += chars;
        }
        if let Some(last) = self.parts.last_mut()
            && member(last, "partId").and_then(Value::as_str) == Some(part_id)
            && let Some(Value::String(text)) = member_mut(last, "text")
        {
            text.push_str(delta);
            return;
        }
        let mut fields = json!({"type": part, "text": delta});
        fields["partId"] = json!(part_id);
        self.parts.push(with(
            json!({"sessionId": self.start.session_id, "messageId": self.assistant_id}),
            fields,
        ));
    }

    // ── model requests ──

    /// A model-request boundary: drain the guide lane, then headers for account models.
    async fn model_request(&mut self) -> StepResult {
        self.drain_guides();
        let model = {
            let state = self.state();
            let Some(resident) = state.sessions.get(self.session_id()) else {
                return Err(Halt::Frozen);
            };
            match resident.current_model() {
                Some(model) if state.entitlements.usable(model) => model,
                _ => return Err(failed("ConfigurationError", "Select a model before continuing.")),
            }
        };
        self.model_requests += 1;
        let storm = self.server.faults.take_one("model-request", AppFault::HeadersStorm);
        self.fault_point("model-request").await?;
        if model.account.is_some() {
            let times = storm.map_or(1, |armed| armed.value.max(1));
            for _ in 0..times {
                self.provider_headers(false).await?;
            }
        }
        Ok(())
    }

    /// `interaction/requestProviderRuntimeHeaders` for the session's model. The answer must
    /// carry the account's API key from the fake home's credentials (or, for Start Plan, the
    /// captcha headers only the Desktop renderer can produce). `explicit` is a scenario step:
    /// it also runs for non-account models.
    async fn provider_headers(&mut self, explicit: bool) -> StepResult {
        let (params, model, workspace) = {
            let state = self.state();
            let Some(resident) = state.sessions.get(self.session_id()) else {
                return Err(Halt::Frozen);
            };
            let Some(model) = resident.current_model() else {
                return Err(failed("ConfigurationError", "Select a model before continuing."));
            };
            if model.account.is_none() && !explicit {
                return Ok(());
            }
            let request_id = format!(
                "{}:provider-runtime-headers:{}",
                self.start.session_id,
                uuid::Uuid::new_v4()
            );
            let mut params = json!({
                "requestId": request_id, "sessionId": self.start.session_id,
                "turnId": self.start.turn_id, "workspace": resident.record.workspace,
                "modelSelection": resident.record.model, "providerId": model.provider_id,
                "reason": "model-request",
            });
            if let Some(access) = catalog::account_access(model) {
                params["accountAccess"] = access;
            }
            (params, model, resident.record.workspace.clone())
        };
        self.fault_point("headers").await?;
        let method = "interaction/requestProviderRuntimeHeaders";
        let mut request =
            ClientRequest::new(method, params.clone(), schemas::named("providerHeadersResponse"));
        request.timeout = Some(self.server.options.headers_timeout);
        request.cancel.push(self.start.stop.0.clone());
        let outcome = self.server.reverse.request(request).await;
        let answer = match outcome {
            Ok(answer) => answer,
            Err(ClientError::Cancelled) => return Err(Halt::Cancelled),
            Err(ClientError::TimedOut { .. }) => {
                self.state().out.frame(&wire::notification(
                    "interaction/providerRuntimeHeadersCancelled",
                    json!({"requestId": params["requestId"], "sessionId": self.start.session_id,
                           "workspace": workspace}),
                ));
                return Err(self.model_error("Provider runtime headers request timed out"));
            }
            Err(other) => {
                let error = other.into_protocol(method);
                return Err(self
                    .model_error(&format!("Provider runtime headers failed: {}", error.message)));
            }
        };
        self.last_outcome = Some(Condition::Allowed);
        if answer["headersApplied"] != true {
            let reason = answer["errorMessage"].as_str().unwrap_or("the host did not apply them");
            self.last_outcome = Some(Condition::Denied);
            return Err(
                self.model_error(&format!("Provider runtime headers were not applied: {reason}"))
            );
        }
        let auth = &answer["requestAuth"];
        let Some(access) = model.account else { return Ok(()) };
        if access.is_start_plan() && self.server.profile.start_plan_needs_captcha() {
            let solved = auth["headers"]
                .as_object()
                .is_some_and(|headers| headers.contains_key("X-Aliyun-Captcha-Verify-Param"));
            if !solved {
                return Err(self.model_error("Start Plan requests need a solved captcha (403)"));
            }
            return Ok(());
        }
        let key = auth["apiKey"].as_str().unwrap_or_default();
        let stored = if access.is_start_plan() {
            catalog::stored_business_token()
        } else {
            catalog::stored_account_key(model.provider_id)
        };
        let valid = match stored {
            StoredKey::Plain(stored) => !key.is_empty() && key == stored,
            StoredKey::Encrypted => !key.is_empty(),
            StoredKey::Missing => false,
        };
        if valid { Ok(()) } else { Err(self.model_error("401 Unauthorized: invalid API key")) }
    }

    /// A failed model request: counted, then the turn fails.
    fn model_error(&self, message: &str) -> Halt {
        self.resident(|resident| resident.record.usage.model_error_count += 1);
        failed("ModelRequestError", message)
    }

    /// Guide-lane inputs join the turn at a model-request boundary (`turn.steerDrained`).
    fn drain_guides(&mut self) {
        let drained: Vec<_> = {
            let mut state = self.state();
            let Some(resident) = state.sessions.get_mut(self.session_id()) else { return };
            let (guides, rest): (Vec<_>, Vec<_>) =
                resident.queue.drain(..).partition(|item| item.delivery == "guide");
            resident.queue = rest.into();
            guides
        };
        if drained.is_empty() {
            return;
        }
        let mut inputs = Vec::new();
        let mut ids = Vec::new();
        for item in &drained {
            let message_id = messages::new_id("msg");
            let message = messages::user_message(self.session_id(), &message_id, &item.text, None);
            self.resident(|resident| {
                resident.record.messages.push(message);
                resident.revision += 1;
            });
            let input = json!({"origin": "realUser", "text": item.text});
            self.v4_rows(|rows, log, batch| {
                log.append_row(batch, with(rows.row("userInput", message_id.clone()), input))
            });
            inputs.push(json!({"pendingInputId": item.input_id, "messageId": message_id,
                               "text": item.text, "delivery": "guide",
                               "intent": {"sourceCommandId": item.command_id}}));
            ids.push(item.input_id.clone());
        }
        let message_ids: Vec<Value> =
            inputs.iter().map(|input| input["messageId"].clone()).collect();
        self.event(
            "turn.steerDrained",
            json!({"pendingInputIds": ids, "targetTurnId": self.start.turn_id,
                   "injectedMessageIds": message_ids, "drainedInputs": inputs}),
        );
        self.v4_patch(&["queue"]);
    }

    // ── control ──

    /// Fires the faults armed for a turn point (the kinds the turn consumes elsewhere stay).
    async fn fault_point(&mut self, point: &str) -> StepResult {
        let kinds = [
            AppFault::Crash,
            AppFault::Exit,
            AppFault::Stall,
            AppFault::Malformed,
            AppFault::InvalidUtf8,
            AppFault::UnknownEvent,
            AppFault::SeqGap,
            AppFault::V4SeqGap,
            AppFault::DropEvents,
            AppFault::Silence,
            AppFault::StderrFlood,
            AppFault::Evict,
        ];
        // At `turn-end` an eviction waits until the turn has ended (`finish`).
        let kinds = if point == "turn-end" { &kinds[..kinds.len() - 1] } else { &kinds[..] };
        let armed = self.server.faults.take_kinds(point, kinds);
        for fault in armed {
            match fault.kind {
                AppFault::DropEvents => {
                    self.resident(|resident| resident.drop += fault.value);
                }
                AppFault::Silence => {
                    self.start.stop.sleep(std::time::Duration::from_millis(fault.value)).await?;
                }
                AppFault::StderrFlood => stderr_flood(fault.value * 1024),
                _ => self.fire(fault.kind, point)?,
            }
        }
        Ok(())
    }

    fn fire(&mut self, fault: AppFault, point: &str) -> StepResult {
        let out = self.server.out.clone();
        match fault {
            AppFault::Crash => {
                out.exit(1, Some(format!("Error: simulated Agent crash at {point}")));
                Err(Halt::Frozen)
            }
            AppFault::Exit => {
                out.exit(1, None);
                Err(Halt::Frozen)
            }
            AppFault::Stall => Err(Halt::Frozen),
            AppFault::Malformed => {
                out.bytes(MALFORMED_LINE.to_vec());
                Ok(())
            }
            AppFault::InvalidUtf8 => {
                out.bytes(super::server::INVALID_UTF8_LINE.to_vec());
                Ok(())
            }
            AppFault::UnknownEvent => {
                self.event("sim.unknownEvent", json!({"note": "no client knows this event"}));
                Ok(())
            }
            AppFault::SeqGap => {
                self.resident(|resident| resident.gap += 3);
                Ok(())
            }
            AppFault::V4SeqGap => {
                self.resident(|resident| resident.publisher.gap += 3);
                Ok(())
            }
            AppFault::Evict => {
                // Mid-turn the runtime vanishes with its turn: nothing more is written.
                self.state().remove_resident(self.session_id());
                Err(Halt::Frozen)
            }
            _ => Ok(()),
        }
    }

    /// A `fault` step of a scenario (the host profiles' fault names).
    fn scenario_fault(&mut self, kind: FaultKind) -> StepResult {
        match kind {
            FaultKind::Crash => self.fire(AppFault::Crash, "scenario"),
            FaultKind::Exit => self.fire(AppFault::Exit, "scenario"),
            FaultKind::Stall => self.fire(AppFault::Stall, "scenario"),
            FaultKind::Malformed => self.fire(AppFault::Malformed, "scenario"),
            FaultKind::UnknownEvent | FaultKind::UnknownSessionEvent => {
                self.fire(AppFault::UnknownEvent, "scenario")
            }
            FaultKind::SeqGap => self.fire(AppFault::SeqGap, "scenario"),
            FaultKind::InvalidUtf8 => self.fire(AppFault::InvalidUtf8, "scenario"),
            FaultKind::Oversize => {
                // Past the longest line a host reads from this Agent (64 MiB: a real resume
                // answered 26 MB in one line, issue 25 [B]), not only past 16 MiB.
                let filler = "x".repeat(65 * 1024 * 1024);
                let delta = self.delta(DeltaKind::Text, None, None, &filler, None);
                self.state().stream_delta(self.session_id(), &delta);
                Ok(())
            }
            FaultKind::Late | FaultKind::Duplicate | FaultKind::SlowStart => {
                eprintln!("zcode-sim: fault {kind:?} does not apply inside an app-server turn");
                Ok(())
            }
        }
    }

    // ── the end ──

    fn usage(&self) -> Usage {
        let counts = TurnCounts {
            context_before: self.context_before,
            prompt_tokens: estimate_tokens(&self.start.text),
            model_requests: self.model_requests,
            output_chars: self.output_chars,
            reasoning_chars: self.reasoning_chars,
        };
        let tokens = counts.tokens(self.usage_override);
        Usage {
            input_tokens: tokens.input,
            output_tokens: tokens.output,
            reasoning_tokens: tokens.reasoning,
            cache_read_tokens: tokens.cache_read,
            cache_creation_tokens: tokens.cache_write,
            model_request_count: self.model_requests,
            model_error_count: 0,
        }
    }

    /// Persists the turn, frees the session, then tells both projections — so whoever reacts
    /// to the terminal event finds the session idle and the history written. Returns the
    /// queued input that starts next, if the queue drains.
    async fn finish(mut self, halt: Halt) -> Option<TurnStart> {
        let halt = match halt {
            Halt::Frozen => Halt::Frozen,
            other => match self.fault_point("turn-end").await {
                Err(frozen) => frozen,
                Ok(()) => other,
            },
        };
        if let Halt::Frozen = halt {
            // A frozen Agent never ends the turn; the session stays busy, like the real one.
            return std::future::pending().await;
        }
        self.close_row();
        let usage = self.usage();
        let duration = now_ms().saturating_sub(self.started_at);
        let response: String = self
            .parts
            .iter()
            .filter(|part| part["type"] == "text")
            .filter_map(|part| part["text"].as_str())
            .collect();
        // The session's `control.phase` and the turn header's `state` (3.15.1 `snapshot.ts`
        // phases, `rows.ts` header states): every result but success and cancelled is a failed
        // header (`projection-rows.ts` `mapTurnResultToHeaderState`) and an `error` phase.
        let (result_type, phase, header) = match &halt {
            Halt::Completed(result_type) if result_type == "success" => {
                (result_type.clone(), "completedSuccess", "completedSuccess")
            }
            Halt::Completed(result_type) => (result_type.clone(), "error", "failed"),
            Halt::Cancelled => {
                ("cancelled".to_owned(), "completedInterrupted", "completedInterrupted")
            }
            _ => (String::new(), "error", "failed"),
        };
        let interrupted = matches!(halt, Halt::Cancelled);
        let parts = std::mem::take(&mut self.parts);
        // From the turn's end in the record to its close on the wire, and the eviction, under
        // one lock: the Agent does all of it in one tick of its event loop, so no prompt is
        // admitted in between (one admitted there lost its turn to the eviction: F-29).
        let server = self.server.clone();
        let mut state = server.state();
        let turn_id = self.start.turn_id.clone();
        {
            let resident = state.sessions.get_mut(self.session_id())?;
            if !parts.is_empty() {
                let workspace = resident.record.workspace_path().to_owned();
                let info = AssistantInfo {
                    session_id: &self.start.session_id,
                    message_id: &self.assistant_id,
                    parent_message_id: &self.start.message_id,
                    model: resident.record.model.as_ref(),
                    workspace_path: &workspace,
                    created: self.started_at,
                    tokens: Tokens {
                        input: usage.input_tokens,
                        output: usage.output_tokens,
                        reasoning: usage.reasoning_tokens,
                        cache_read: usage.cache_read_tokens,
                        cache_write: usage.cache_creation_tokens,
                    },
                    finish: if interrupted { "cancelled" } else { "stop" },
                };
                let message = messages::assistant_message(&info, parts);
                resident.record.messages.push(message);
            }
            resident.record.usage.add(&usage);
            resident.record.context_used =
                self.context_before + estimate_tokens(&self.start.text) + usage.output_tokens;
            resident.record.updated_at = now_ms();
            resident.turn = None;
            resident.last_phase = phase;
            resident.revision += 1;
            resident.pending_interactions.clear();
            resident.pending_permissions.clear();
            resident.active_tools.clear();
            resident.pending_requests.clear();
            // Guide inputs the turn never reached fall back to the normal queue.
            let reason = if interrupted { "guide.turnInterrupted" } else { "guide.noToolBoundary" };
            for item in resident.queue.iter_mut().filter(|item| item.delivery == "guide") {
                item.delivery = "queue";
                item.steer_state = "fellBack";
                item.fallback_reason = Some(reason);
            }
            state.persist(self.session_id());
        }
        let (kind, payload) = match halt {
            Halt::Failed { kind, message } => (
                "turn.failed",
                json!({"error": {"type": kind, "message": message}, "turnPhase": "model_request",
                       "inputId": self.start.input_id}),
            ),
            _ => (
                "turn.completed",
                json!({
                    "response": response,
                    "tokenCount": usage.total(),
                    "usage": {
                        "source": "provider", "modelRequestCount": usage.model_request_count,
                        "inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens,
                        "totalTokens": usage.total(), "cacheReadTokens": usage.cache_read_tokens,
                        "cacheWriteTokens": usage.cache_creation_tokens,
                        "reasoningTokens": usage.reasoning_tokens,
                    },
                    "toolCallCount": self.tool_calls,
                    "duration": duration,
                    "inputId": self.start.input_id,
                    "resultType": result_type,
                }),
            ),
        };
        let sid = self.session_id();
        let window = state
            .sessions
            .get(sid)
            .and_then(|resident| resident.current_model())
            .map_or(200_000, |model| model.context_window);
        state.event(
            sid,
            Some(&turn_id),
            "session.updated",
            json!({"usage": {"inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens},
                   "contextWindow": window}),
        );
        state.event(sid, Some(&turn_id), kind, payload);
        // The context usage is the model's (ModelComplete), before the turn closes its header
        // (TurnComplete); the control state follows the close.
        state.v4_patch(sid, &["usage"]);
        let close = (self.turn_row, (self.started_at, usage.output_tokens));
        state.v4_with(sid, |log, batch| self.rows.close(log, batch, close.0, header, close.1));
        state.v4_patch(
            sid,
            &["control", "availability", "inputRouting", "queue", "pendingInteractions"],
        );
        let reason = if kind == "turn.failed" { "prompt_failed" } else { "prompt_completed" };
        if let Ok(mut patch) = state.settings(self.session_id()) {
            patch["status"] = json!("idle");
            state.state_updated(self.session_id(), reason, patch);
        }
        let evict = self.server.faults.take_one("turn-end", AppFault::Evict).is_some();
        if evict {
            state.remove_resident(self.session_id());
            return None;
        }
        let next = state
            .sessions
            .get_mut(self.session_id())
            .and_then(|resident| if resident.auto_drain { resident.next_queued() } else { None });
        if next.is_some() {
            state.started(self.session_id());
        }
        next
    }
}

/// Writes `bytes` of stack-trace lines to stderr in one go, blocking until they are taken (the
/// `stderr-flood` fault): while a host does not read them the turn cannot go on.
fn stderr_flood(bytes: u64) {
    use std::io::Write;
    const TRACE: &str = "Error: 429 Too Many Requests (simulated model error)\n    at retryModelRequest (zcode.cjs:1:1)\n    at async runTurn (zcode.cjs:1:1)\n";
    let mut text = String::with_capacity(bytes as usize + TRACE.len());
    while (text.len() as u64) < bytes {
        text.push_str(TRACE);
    }
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
    let _ = stderr.flush();
}
