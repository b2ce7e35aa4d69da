//! The simulator without zcode-acp: the same fake install and launch plan, driven by the native
//! mapper over plain blocking pipes. Its times are the simulator's own (the native mapper adds
//! microseconds), the baseline for what zcode-acp adds.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use zcode_contract::{
    ConnectionOp, Inbound, LaunchPlan, Mapper, MapperConnection, MapperSession, NativeReply,
    OpResult, SessionInit, Step,
};
use zcode_discovery::{Discovery, Inspector, MapperContract, RecordedRegistry, Search};
use zcode_fake_install::{FakeInstall, Runner};
use zcode_task_v1::TaskV1Mapper;

use crate::env::BenchEnv;

/// A simulated install and the plan that starts its host.
pub struct SimulatedInstall {
    plan: LaunchPlan,
    /// The verified executable the plan runs.
    executable: std::path::PathBuf,
}

impl SimulatedInstall {
    /// Lays out the install the way `zcode-acp --simulate` does, and selects it through
    /// discovery (which verifies it) to get the launch plan.
    pub fn prepare(env: &BenchEnv) -> Result<Self, String> {
        let runner = Runner {
            program: env.binary().to_path_buf(),
            args: vec![
                "simulator".into(),
                "runtime".into(),
                "--state".into(),
                env.path("state").display().to_string(),
            ],
        };
        let root = FakeInstall::builder(env.path("native-install").join("ZCode"))
            .runner(runner)
            .build()
            .map_err(|e| format!("cannot lay out the simulated install: {e}"))?;
        let mapper = TaskV1Mapper;
        let platform = zcode_contract::Platform::current();
        let contracts = [MapperContract { source: mapper.source(), contract: mapper.contract() }];
        let search = Search {
            install_flag: Some(&root),
            node_flag: None,
            env: &|_| None,
            home: None,
            registry: &RecordedRegistry::default(),
        };
        let discovery = Discovery::run(&search, &Inspector::new(&platform), &contracts);
        let selected = discovery.into_selected().map_err(|e| format!("discovery: {e}"))?;
        let plan = mapper.launch_plan(&selected.install).map_err(|e| e.to_string())?;
        Ok(Self { plan, executable: selected.install.executable.into() })
    }
}

/// A running simulator host, driven synchronously.
pub struct NativeHost {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
    connection: Box<dyn MapperConnection>,
    /// Replies that arrived for nobody yet (in order).
    replies: Vec<NativeReply>,
    next_request: u64,
    next_op: u64,
}

impl NativeHost {
    /// Starts the host and completes its setup (handshake and `setup` operation).
    pub fn start(install: &SimulatedInstall) -> Result<Self, String> {
        let plan = &install.plan;
        let program = &install.executable;
        let mut child = Command::new(program)
            .args(&plan.args)
            .envs(plan.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&plan.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped");
        let connection = TaskV1Mapper.connection().map_err(|e| e.to_string())?;
        let mut host = Self {
            child,
            stdin,
            stdout,
            connection,
            replies: Vec::new(),
            next_request: 1,
            next_op: 1,
        };
        if !plan.stdin_preamble.is_empty() {
            host.write(&plan.stdin_preamble)?;
        }
        if plan.needs_handshake {
            while !host.read_once()? {}
        }
        let op_id = host.op_id();
        let first = host.next_request;
        let step =
            host.connection.start(op_id, &ConnectionOp::Setup, first).map_err(|e| e.to_string())?;
        host.finish_op(
            step,
            |host, id, reply, first| {
                host.connection.resume(id, reply, first).map_err(|e| e.to_string())
            },
            op_id,
        )?;
        Ok(host)
    }

    /// Runs one operation of a native session of the native mapper to completion.
    pub fn session_op(
        &mut self,
        init: &SessionInit,
        op: zcode_contract::SessionOp,
    ) -> Result<(Box<dyn MapperSession>, OpResult), String> {
        let mut session = TaskV1Mapper.session(init).map_err(|e| e.to_string())?;
        let op_id = self.op_id();
        let step = session.start(op_id, &op, self.next_request).map_err(|e| e.to_string())?;
        let result = {
            let session = &mut session;
            self.finish_op(
                step,
                |_, id, reply, first| session.resume(id, reply, first).map_err(|e| e.to_string()),
                op_id,
            )?
        };
        Ok((session, result))
    }

    fn op_id(&mut self) -> u64 {
        self.next_op += 1;
        self.next_op
    }

    /// Sends the step's requests and feeds replies back until the operation is done.
    fn finish_op(
        &mut self,
        mut step: Step,
        mut resume: impl FnMut(&mut Self, u64, Option<&NativeReply>, u64) -> Result<Step, String>,
        op_id: u64,
    ) -> Result<OpResult, String> {
        let mut pending: Vec<u64> = Vec::new();
        loop {
            match step {
                Step::Done(result) => return result.map_err(|e| e.message),
                Step::Wait(outgoing) => {
                    for write in &outgoing.writes {
                        self.write(&write.bytes)?;
                    }
                    for request in &outgoing.requests {
                        self.next_request = request.id + 1;
                        if request.awaits_reply() {
                            pending.push(request.id);
                        }
                        self.write(&request.bytes)?;
                    }
                }
            }
            if pending.is_empty() {
                // A step that awaits nothing is resumed at once, as the bridge does.
                let first = self.next_request;
                step = resume(self, op_id, None, first)?;
                continue;
            }
            let reply = loop {
                if let Some(at) = self.replies.iter().position(|r| pending.contains(&r.id)) {
                    break self.replies.remove(at);
                }
                self.read_once()?;
            };
            pending.retain(|id| *id != reply.id);
            let first = self.next_request;
            step = resume(self, op_id, Some(&reply), first)?;
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin.write_all(bytes).and_then(|()| stdin.flush()).map_err(|e| e.to_string())
    }

    /// Reads what the host wrote and handles it; true once the connection reported `Ready`.
    fn read_once(&mut self) -> Result<bool, String> {
        let mut buffer = [0u8; 64 * 1024];
        let read = self.stdout.read(&mut buffer).map_err(|e| e.to_string())?;
        if read == 0 {
            return Err("the simulator closed its stdout".into());
        }
        let mut ready = false;
        for item in self.connection.push(&buffer[..read]).map_err(|e| e.to_string())? {
            match item {
                Inbound::Reply(reply) => self.replies.push(reply),
                Inbound::Write(write) => self.write(&write.bytes)?,
                Inbound::Ready => ready = true,
                Inbound::Event(_) | Inbound::Ignored(_) => {}
            }
        }
        Ok(ready)
    }

    pub fn finish(mut self) -> Result<(), String> {
        drop(self.stdin.take());
        self.child.wait().map_err(|e| e.to_string())?;
        Ok(())
    }
}

/// `session/new` parameters as the coordinator hands them to the mapper.
pub fn create_op(workspace: &Path) -> zcode_contract::SessionOp {
    let params = serde_json::json!({"cwd": workspace, "mcpServers": []});
    zcode_contract::SessionOp::Create(params.to_string())
}
