//! The ACP side of the demo: the SDK's client spawns the agent, one session runs every step,
//! and what arrives for it goes to the renderer or, for requests, to the answer logic.
//!
//! Requests are read from the session's own ordered stream in this one task (no handlers on
//! the connection), so a permission prompt is shown after the updates that preceded it and
//! waiting for the person at the keyboard never blocks the connection.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::util::MatchDispatch;
use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, CreateElicitationRequest, CreateElicitationResponse,
    ElicitationAcceptAction, ElicitationAction, ElicitationCapabilities,
    ElicitationFormCapabilities, ElicitationMode, Implementation, InitializeRequest,
    PlanCapabilities, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionNotification,
};
use agent_client_protocol::v1::{self, ActiveSession, ConnectionTo, SessionMessage, SessionSetup};
use agent_client_protocol::{AcpAgent, AcpAgentConfig, Agent, Client};
use tokio::sync::{mpsc, watch};

use super::answer::{self, Field, FormAnswer, Policy, Reply};
use super::render::Renderer;

/// Everything one demo run needs.
pub struct Setup {
    /// How to start the agent (`zcode-acp --simulate`).
    pub agent: AcpAgentConfig,
    /// The session's working directory (absolute).
    pub cwd: PathBuf,
    pub steps: Vec<Step>,
    pub policy: Policy,
}

/// One prompt; tour steps carry a caption.
pub struct Step {
    pub caption: Option<String>,
    pub prompt: String,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Ending {
    /// Every prompt ended (any stop reason).
    Finished,
    /// Ctrl-C cancelled a turn; later steps were skipped.
    Interrupted,
}

#[derive(Debug)]
pub enum Failure {
    /// The demo could not be prepared (workspace, executable, runtime).
    Setup(String),
    /// The agent answered with an error, or the connection broke.
    Agent { during: &'static str, error: agent_client_protocol::Error },
    /// Stdout could not be written.
    Output(io::Error),
    /// Ctrl-C a second time.
    Quit,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Agent { during, error } => {
                write!(f, "{during} failed: {}", error.message)?;
                // Text detail (such as the agent's stderr tail) helps; structured data is
                // for programs, and this is read by a person.
                match &error.data {
                    Some(serde_json::Value::String(detail)) => write!(f, ": {detail}"),
                    _ => Ok(()),
                }
            }
            Failure::Setup(problem) => f.write_str(problem),
            Failure::Output(error) => write!(f, "cannot write to stdout: {error}"),
            Failure::Quit => f.write_str("interrupted"),
        }
    }
}

impl From<io::Error> for Failure {
    fn from(error: io::Error) -> Self {
        Failure::Output(error)
    }
}

fn agent_error(during: &'static str) -> impl FnOnce(agent_client_protocol::Error) -> Failure {
    move |error| Failure::Agent { during, error }
}

/// Starts the agent, runs every step in one session, and shuts the agent down.
pub async fn run<W: Write>(setup: Setup, renderer: &mut Renderer<W>) -> Result<Ending, Failure> {
    let Setup { agent, cwd, steps, policy } = setup;
    let mut driver = Driver {
        renderer,
        policy,
        input: Input::default(),
        interrupts: interrupts(),
        cancelled: false,
    };
    let outcome = Client
        .v1()
        .name("zcode-acp demo")
        .connect_with(AcpAgent::new(agent), async |cx: ConnectionTo<Agent>| {
            Ok(driver.run(&cx, &cwd, &steps).await)
        })
        .await;
    // A failure can cut a streamed line short; the error goes to stderr after it.
    driver.renderer.finish()?;
    match outcome {
        Ok(result) => result,
        Err(error) => Err(Failure::Agent { during: "the agent process", error }),
    }
}

fn initialize_request() -> InitializeRequest {
    let capabilities = ClientCapabilities::new()
        .elicitation(ElicitationCapabilities::new().form(ElicitationFormCapabilities::new()))
        .plan(PlanCapabilities::new());
    InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(capabilities)
        .client_info(Implementation::new("zcode-acp-demo", env!("CARGO_PKG_VERSION")))
}

/// Counts Ctrl-C presses. Once listened for, Ctrl-C no longer kills the process, so the
/// agent (in its own process group) is shut down and the workspace removed properly.
fn interrupts() -> watch::Receiver<u32> {
    let (presses, receiver) = watch::channel(0);
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            presses.send_modify(|count| *count += 1);
        }
    });
    receiver
}

/// Lines typed on stdin, read on first use.
#[derive(Default)]
struct Input {
    lines: Option<mpsc::UnboundedReceiver<String>>,
}

impl Input {
    /// The next line; `None` once stdin is closed.
    async fn line(&mut self) -> Option<String> {
        self.lines.get_or_insert_with(read_stdin_lines).recv().await
    }
}

/// A detached thread, not a runtime blocking task: a blocking read cannot be cancelled, and
/// the runtime would wait for it at shutdown.
fn read_stdin_lines() -> mpsc::UnboundedReceiver<String> {
    let (sender, receiver) = mpsc::unbounded_channel();
    // If the thread cannot start, the sender is dropped and stdin reads as closed.
    let _ = std::thread::Builder::new().name("demo-stdin".into()).spawn(move || {
        for line in io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    receiver
}

/// The result of asking the person at the keyboard.
enum Asked<T> {
    Answer(T),
    /// Stdin was closed.
    Closed,
    /// Ctrl-C: the turn is being cancelled.
    Interrupted,
}

enum Event<T> {
    Arrived(T),
    Interrupt,
}

type Session = ActiveSession<'static, Agent>;

struct Driver<'a, W: Write> {
    renderer: &'a mut Renderer<W>,
    policy: Policy,
    input: Input,
    interrupts: watch::Receiver<u32>,
    /// `session/cancel` was sent for the current turn.
    cancelled: bool,
}

impl<W: Write> Driver<'_, W> {
    async fn run(
        &mut self,
        cx: &ConnectionTo<Agent>,
        cwd: &Path,
        steps: &[Step],
    ) -> Result<Ending, Failure> {
        cx.send_request(initialize_request())
            .block_task()
            .await
            .map_err(agent_error("initialize"))?;
        let SessionSetup { mut session, response, .. } = cx
            .build_session(cwd)
            .block_task()
            .start_session()
            .await
            .map_err(agent_error("creating the session"))?;
        self.renderer.session_started(&response)?;
        for (index, step) in steps.iter().enumerate() {
            if let Some(caption) = &step.caption {
                self.renderer.step(index + 1, steps.len(), caption)?;
            }
            self.renderer.prompt(&step.prompt)?;
            session.send_prompt(&step.prompt).map_err(agent_error("sending the prompt"))?;
            self.turn(&mut session).await?;
            if self.cancelled {
                return Ok(Ending::Interrupted);
            }
        }
        Ok(Ending::Finished)
    }

    /// Shows one turn until the prompt's response.
    async fn turn(&mut self, session: &mut Session) -> Result<(), Failure> {
        loop {
            let event = tokio::select! {
                message = session.read_update() => Event::Arrived(message),
                Ok(()) = self.interrupts.changed() => Event::Interrupt,
            };
            let message = match event {
                Event::Arrived(message) => message.map_err(agent_error("the session"))?,
                Event::Interrupt if self.cancelled => return Err(Failure::Quit),
                Event::Interrupt => {
                    self.renderer.note("Ctrl-C: cancelling the turn (press again to quit)")?;
                    self.cancel(session)?;
                    continue;
                }
            };
            match message {
                SessionMessage::Message(dispatch) => self.dispatch(session, dispatch).await?,
                SessionMessage::PromptResponse(response) => {
                    let response = response.map_err(agent_error("the prompt"))?;
                    self.renderer.stop(&response)?;
                    return Ok(());
                }
                _ => {}
            }
        }
    }

    fn cancel(&mut self, session: &Session) -> Result<(), Failure> {
        if !self.cancelled {
            self.cancelled = true;
            let cancel = CancelNotification::new(session.session_id().clone());
            session.connection().send_notification(cancel).map_err(agent_error("cancelling"))?;
        }
        Ok(())
    }

    /// Renders a notification or answers a request. Requests this client does not serve
    /// (files, terminals: not advertised) get "method not found".
    async fn dispatch(&mut self, session: &Session, dispatch: v1::Dispatch) -> Result<(), Failure> {
        // Failures of our own side (stdout) are kept here; the matcher only carries ACP errors.
        let mut failure = None;
        MatchDispatch::new(dispatch.into_raw())
            .if_notification(async |notification: SessionNotification| {
                if let Err(error) = self.renderer.update(&notification.update) {
                    failure = Some(Failure::Output(error));
                }
                Ok(())
            })
            .await
            .if_request(async |request: RequestPermissionRequest, responder| {
                match self.permission(session, &request).await {
                    Ok(outcome) => responder.respond(RequestPermissionResponse::new(outcome)),
                    Err(error) => {
                        failure = Some(error);
                        responder.respond(RequestPermissionResponse::new(
                            RequestPermissionOutcome::Cancelled,
                        ))
                    }
                }
            })
            .await
            .if_request(async |request: CreateElicitationRequest, responder| {
                match self.form(session, &request).await {
                    Ok(response) => responder.respond(response),
                    Err(error) => {
                        failure = Some(error);
                        responder.respond(CreateElicitationResponse::new(ElicitationAction::Cancel))
                    }
                }
            })
            .await
            .otherwise_ignore()
            .map_err(agent_error("answering the agent"))?;
        failure.map_or(Ok(()), Err)
    }

    async fn permission(
        &mut self,
        session: &Session,
        request: &RequestPermissionRequest,
    ) -> Result<RequestPermissionOutcome, Failure> {
        self.renderer.permission(request)?;
        let options = &request.options;
        let (choice, reason) = match self.policy {
            Policy::Ask => {
                let parse = |reply: &str| {
                    answer::parse_permission_reply(options, reply)
                        .ok_or_else(|| format!("choose 1-{}, y or n", options.len()))
                };
                match self.ask(session, "number, y or n", parse).await? {
                    Asked::Answer(index) => (Some(index), ""),
                    Asked::Closed => {
                        (answer::automatic_permission(options, Policy::NoTerminal), "stdin closed")
                    }
                    Asked::Interrupted => {
                        self.renderer.answer("cancelled", "Ctrl-C")?;
                        return Ok(RequestPermissionOutcome::Cancelled);
                    }
                }
            }
            policy => (answer::automatic_permission(options, policy), policy.reason()),
        };
        match choice {
            Some(index) => {
                let option = &options[index];
                self.renderer.answer(&option.name, reason)?;
                let selected = SelectedPermissionOutcome::new(option.option_id.clone());
                Ok(RequestPermissionOutcome::Selected(selected))
            }
            None => {
                self.renderer.answer("cancelled (no option fits)", reason)?;
                Ok(RequestPermissionOutcome::Cancelled)
            }
        }
    }

    async fn form(
        &mut self,
        session: &Session,
        request: &CreateElicitationRequest,
    ) -> Result<CreateElicitationResponse, Failure> {
        self.renderer.form(&request.message)?;
        let ElicitationMode::Form(form) = &request.mode else {
            self.renderer.answer("declined", "only form questions are supported")?;
            return Ok(CreateElicitationResponse::new(ElicitationAction::Decline));
        };
        let fields = answer::fields(&form.requested_schema);
        let (answer, reason) = match self.policy {
            Policy::Ask => self.ask_form(session, &fields, &request.message).await?,
            policy => {
                for field in &fields {
                    self.renderer.field(field, &request.message)?;
                }
                (answer::automatic_form(&fields, policy), policy.reason())
            }
        };
        let action = match answer {
            FormAnswer::Accept(content) => {
                self.renderer.answer(&summary(&fields, &content), reason)?;
                ElicitationAction::Accept(ElicitationAcceptAction::new().content(content))
            }
            FormAnswer::Decline => {
                self.renderer.answer("declined", reason)?;
                ElicitationAction::Decline
            }
            FormAnswer::Cancel => {
                self.renderer.answer("cancelled", reason)?;
                ElicitationAction::Cancel
            }
        };
        Ok(CreateElicitationResponse::new(action))
    }

    async fn ask_form(
        &mut self,
        session: &Session,
        fields: &[Field],
        message: &str,
    ) -> Result<(FormAnswer, &'static str), Failure> {
        let mut content = BTreeMap::new();
        for field in fields {
            self.renderer.field(field, message)?;
            let parse = |reply: &str| answer::parse_reply(field, reply);
            match self.ask(session, &answer::hint(field), parse).await? {
                Asked::Answer(Reply::Value(value)) => {
                    content.insert(field.key.clone(), value);
                }
                Asked::Answer(Reply::Skip) => {}
                Asked::Answer(Reply::Decline) => return Ok((FormAnswer::Decline, "")),
                Asked::Closed => return Ok((FormAnswer::Decline, "stdin closed")),
                Asked::Interrupted => return Ok((FormAnswer::Cancel, "Ctrl-C")),
            }
        }
        Ok((FormAnswer::Accept(content), ""))
    }

    /// Asks until `parse` accepts a line. Ctrl-C cancels the turn.
    async fn ask<T>(
        &mut self,
        session: &Session,
        hint: &str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Asked<T>, Failure> {
        loop {
            self.renderer.ask(hint)?;
            let event = tokio::select! {
                line = self.input.line() => Event::Arrived(line),
                Ok(()) = self.interrupts.changed() => Event::Interrupt,
            };
            let line = match event {
                Event::Arrived(Some(line)) => line,
                Event::Arrived(None) => return Ok(Asked::Closed),
                Event::Interrupt => {
                    self.cancel(session)?;
                    return Ok(Asked::Interrupted);
                }
            };
            // The terminal echoed the reply and its newline.
            self.renderer.typed(&line)?;
            match parse(&line) {
                Ok(value) => return Ok(Asked::Answer(value)),
                Err(problem) => self.renderer.invalid(&problem)?,
            }
        }
    }
}

/// The accepted answers as one line: `Fast` for one question, `Approach: Fast · Checks: Tests`
/// for several.
fn summary(
    fields: &[Field],
    content: &BTreeMap<String, agent_client_protocol::v1::schema::ElicitationContentValue>,
) -> String {
    let parts: Vec<String> = fields
        .iter()
        .filter_map(|field| content.get(&field.key).map(|value| (field, value)))
        .map(|(field, value)| match fields.len() {
            1 => answer::shown(field, value),
            _ => format!("{}: {}", field.label, answer::shown(field, value)),
        })
        .collect();
    if parts.is_empty() { "accepted".to_string() } else { parts.join(" · ") }
}
