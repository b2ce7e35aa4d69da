//! Bridge mode (`-e <script>`): what the bridge script plus the host worker look like from the
//! parent — NDJSON on stdin/stdout, `__call` / `__subscribe` / `__unsubscribe`.
//!
//! Lines are dispatched in arrival order (as the bridge hands each message to the host
//! synchronously); only deliberate delays run in the background, so a late or stalled answer
//! never holds up the next request.

mod descriptor;
pub mod envelope;
mod projection;

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::common::output::Output;
use crate::common::process::{ScenarioOptions, block_on, read_lines};
use crate::task::fault::{FaultKind, Faults};
use crate::task::host_service::{Handled, Host, HostOptions};
use crate::task::profile::{Channel, Profile};
use crate::task::turn;
use descriptor::BridgeEnv;
use envelope::{Inbound, classify, error_frame, invalid_json_frame, js_text, result_frame};

/// Status of the bridge when its host worker exits on its own: the worker's code, or 1 when
/// the worker exited with 0 (reference §2.2). The simulated worker always "exits with 0".
pub const WORKER_EXIT_STATUS: i32 = 1;

struct Bridge {
    host: Arc<Host>,
    env: BridgeEnv,
}

/// Runs the bridge until stdin closes or a signal arrives, then exits the process.
pub fn run(install_root: &std::path::Path, profile: &'static Profile) -> ExitCode {
    if std::env::var("ELECTRON_RUN_AS_NODE").as_deref() != Ok("1") {
        eprintln!(
            "zcode-sim: ELECTRON_RUN_AS_NODE=1 is required (without it the real executable \
             would start the desktop app instead of running the script)"
        );
        return ExitCode::from(1);
    }
    let env = match BridgeEnv::from_env(profile) {
        Ok(env) => env,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(1);
        }
    };
    let options = match host_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("zcode-sim: {message}");
            return ExitCode::from(2);
        }
    };
    let mut method_points: Vec<&str> = profile.agent_channel.to_vec();
    method_points.extend_from_slice(profile.task_channel);
    method_points.extend_from_slice(profile.model_selection_channel);
    let faults = match Faults::from_env(&method_points) {
        Ok(faults) => faults,
        Err(message) => {
            eprintln!("zcode-sim: invalid ZCODE_SIM_FAULT: {message}");
            return ExitCode::from(2);
        }
    };
    let store = crate::task::host_service::store::Store::for_install(install_root);
    block_on(async move {
        let out = Output::start(false);
        let host = Host::new(profile, options, faults, store, out);
        serve(Arc::new(Bridge { host, env })).await
    });
    ExitCode::SUCCESS
}

fn host_options() -> Result<HostOptions, String> {
    let ScenarioOptions { scenario_file, chunk_delay } = ScenarioOptions::from_env()?;
    Ok(HostOptions { signed_out: crate::common::auth::signed_out(), scenario_file, chunk_delay })
}

async fn serve(bridge: Arc<Bridge>) {
    let out = bridge.host.out.clone();
    let mut stalled = false;
    for fault in bridge.host.faults.take("start") {
        match fault.kind {
            FaultKind::SlowStart => tokio::time::sleep(fault.delay()).await,
            FaultKind::Crash => {
                out.exit(1, Some("ZCode host worker failed: simulated crash at start".into()))
            }
            FaultKind::Exit => out.exit(WORKER_EXIT_STATUS, None),
            FaultKind::Stall => stalled = true,
            _ => {}
        }
    }
    let mut reader = tokio::io::BufReader::with_capacity(1 << 16, tokio::io::stdin());
    read_lines(&mut reader, stalled, |line| bridge.handle_line(line)).await;
    // Like the bridge's shutdown: dispose every subscription, then exit cleanly.
    bridge.host.dispose_subscriptions();
    out.exit(0, None);
    std::future::pending::<()>().await;
}

impl Bridge {
    fn handle_line(self: &Arc<Self>, line: &[u8]) {
        match classify(line) {
            Inbound::Ignored => {}
            Inbound::InvalidJson => self.host.out.frame(&invalid_json_frame()),
            Inbound::Request { id, method, params } => {
                self.handle_request(id, method.as_ref(), &params)
            }
        }
    }

    fn handle_request(self: &Arc<Self>, id: Value, method: Option<&Value>, params: &Value) {
        let point = fault_point(method, params);
        let faults = point.as_deref().map(|point| self.host.faults.take(point)).unwrap_or_default();
        let mut delay = None;
        let mut duplicate = false;
        for fault in &faults {
            match fault.kind {
                FaultKind::Crash => {
                    let point = point.as_deref().unwrap_or("?");
                    let message = format!("ZCode host worker failed: simulated crash at {point}");
                    return self.host.out.exit(1, Some(message));
                }
                FaultKind::Exit => return self.host.out.exit(WORKER_EXIT_STATUS, None),
                FaultKind::Stall => return,
                FaultKind::Late => delay = Some(fault.delay()),
                FaultKind::Duplicate => duplicate = true,
                FaultKind::SlowStart => {}
                other => self.host.inject(other, session_of(method, params).as_deref()),
            }
        }
        let (frame, turn) = match self.dispatch(method, params) {
            Ok(Handled { result, turn }) => (result_frame(&id, result), turn),
            Err(message) => (error_frame(&id, &message), None),
        };
        let out = self.host.out.clone();
        let write = move || {
            out.frame(&frame);
            if duplicate {
                out.frame(&frame);
            }
        };
        match delay {
            None => {
                write();
                // The turn starts after its acknowledgement is on its way.
                if let Some(start) = turn {
                    tokio::spawn(turn::run(self.host.clone(), start));
                }
            }
            Some(delay) => {
                if let Some(start) = turn {
                    tokio::spawn(turn::run(self.host.clone(), start));
                }
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    write();
                });
            }
        }
    }

    fn dispatch(
        self: &Arc<Self>,
        method: Option<&Value>,
        params: &Value,
    ) -> Result<Handled, String> {
        match method.and_then(Value::as_str) {
            Some("__call") => self.call(params),
            Some("__subscribe") => {
                self.subscribe(params)?;
                Ok(json!({"subscribed": true}).into())
            }
            Some("__unsubscribe") => {
                if let Some(id) = params.get("subscriptionId").and_then(Value::as_str) {
                    self.host.unsubscribe(id);
                }
                Ok(json!({"unsubscribed": true}).into())
            }
            _ => Err(format!("Unsupported bridge method: {}", js_text(method))),
        }
    }

    /// `__call`: the bridge's allowlist, then the host channel the service maps to.
    fn call(self: &Arc<Self>, params: &Value) -> Result<Handled, String> {
        let service = params.get("service");
        let method = params.get("method");
        let Some((service, channel_name)) = service
            .and_then(Value::as_str)
            .and_then(|name| self.env.service_channels.get_key_value(name))
        else {
            return Err(format!("Unsupported bridge service: {}", js_text(service)));
        };
        let method_name = js_text(method);
        let profile = self.host.profile;
        let agent_method =
            service == "agent" && profile.bridge_agent_methods.contains(&method_name.as_str());
        let model_selection_method = service == projection::SERVICE
            && profile.bridge_model_selection_methods.contains(&method_name.as_str());
        let operation = self.env.operations.iter().any(|(s, m)| s == service && *m == method_name);
        let allowed = agent_method || model_selection_method || operation;
        if method.and_then(Value::as_str).is_none() || !allowed {
            return Err(format!("Unsupported native bridge method: {service}:{method_name}"));
        }
        let channel = Channel::from_name(channel_name)
            .ok_or_else(|| format!("Unknown channel: {channel_name}"))?;
        let native_params = params.get("params").cloned().unwrap_or(Value::Null);
        let handled = self.host.call(channel, &method_name, &native_params)?;
        if model_selection_method && method_name == "getView" {
            // The raw view carries credentials: only its projection leaves the bridge.
            let result = projection::model_selection_view(&handled.result)?;
            return Ok(Handled { result, turn: handled.turn });
        }
        if agent_method && method_name == "readSession" {
            let result = projection::session_read(handled.result);
            return Ok(Handled { result, turn: handled.turn });
        }
        Ok(handled)
    }

    fn subscribe(&self, params: &Value) -> Result<(), String> {
        let id = match params.get("subscriptionId").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => id,
            _ => return Err("Invalid subscription id".into()),
        };
        if self.host.has_subscription(id) {
            return Err("Duplicate subscription id".into());
        }
        self.host.subscribe(id, params.get("target").unwrap_or(&Value::Null))
    }
}

/// The fault point a request reaches: its native method, `subscribe` or `unsubscribe`.
fn fault_point(method: Option<&Value>, params: &Value) -> Option<String> {
    match method.and_then(Value::as_str)? {
        "__call" => params.get("method").and_then(Value::as_str).map(str::to_owned),
        "__subscribe" => Some("subscribe".into()),
        "__unsubscribe" => Some("unsubscribe".into()),
        _ => None,
    }
}

/// The session a request is about, for faults injected into its event stream.
fn session_of(method: Option<&Value>, params: &Value) -> Option<String> {
    let scope = match method.and_then(Value::as_str)? {
        "__call" => params.get("params")?,
        "__subscribe" => params.get("target")?,
        _ => return None,
    };
    scope
        .get("sessionId")
        .or_else(|| scope.get("taskId"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}
