"""An ACP client built on the Python SDK (`agent-client-protocol` 0.12.1) driving
`zcode-acp --simulate` in one session: initialize, a streamed reply, an edit whose permission it
approves, and a slow turn it cancels with `session/cancel`.

Usage: python py_client.py <zcode-acp> <workspace> <agent-stderr-log>
Prints PASS/FAIL lines and `  # ` notes on what it received; exits non-zero on a failure.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Awaitable, Callable

import acp
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    RequestPermissionResponse,
)

# Hang guard for one answer from the agent (a simulated turn takes well under a second); the
# first `session/new` also loads the mapper, which a cold debug build compiles slowly.
ANSWER_S = 30
SESSION_NEW_S = 300
EDIT_PATH = "py-edit.txt"
EDIT_CONTENT = "Written through the Python SDK client."
CHECKS = ["initialize", "streamed reply", "tool call", "permission", "cancel"]


class Checks:
    """Every check is declared up front, so a crash still reports the unreached ones."""

    def __init__(self, prefix: str, names: list[str]) -> None:
        self.prefix = prefix
        self.pending = list(names)
        self.failed = 0

    def report(self, name: str, ok: bool, detail: str = "") -> None:
        self.pending.remove(name)
        self.failed += 0 if ok else 1
        suffix = f" ({detail})" if detail else ""
        print(f"{'PASS' if ok else 'FAIL'} {self.prefix}: {name}{suffix}", flush=True)

    async def run(self, name: str, body: Callable[[], Awaitable[str | None]]) -> bool:
        try:
            detail = await body()
        except Exception as error:  # noqa: BLE001 - any failure fails this check only
            self.report(name, False, f"{type(error).__name__}: {error}")
            return False
        self.report(name, True, detail or "")
        return True

    def finish(self, reason: str) -> int:
        for name in list(self.pending):
            self.report(name, False, reason)
        return 0 if self.failed == 0 else 1


def note(text: str) -> None:
    print(f"  # {text}", flush=True)


class CheckFailed(Exception):
    pass


def check(condition: object, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


class RecordingClient:
    """Records every update and permission request; approves with the allow-once option."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.permission_requests: list[tuple[Any, list[Any], Any]] = []
        self.first_chunk = asyncio.Event()

    async def request_permission(self, options, session_id, tool_call, **kwargs):
        chosen = next((o for o in options if o.kind == "allow_once"), None)
        chosen = chosen or next((o for o in options if o.kind.startswith("allow")), None)
        self.permission_requests.append((tool_call, options, chosen))
        if chosen is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=chosen.option_id)
        )

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append(update)
        if update.session_update == "agent_message_chunk":
            self.first_chunk.set()

    def on_connect(self, conn) -> None:
        pass


def text_of(updates: list[Any], kind: str) -> str:
    return "".join(
        getattr(u.content, "text", "")
        for u in updates
        if u.session_update == kind and getattr(u.content, "type", None) == "text"
    )


def summary(updates: list[Any]) -> str:
    counts = Counter(u.session_update for u in updates)
    return ", ".join(f"{kind}×{n}" for kind, n in counts.items())


async def scenario(
    agent: str, agent_args: list[str], workspace: Path, stderr_log: Path, checks: Checks
) -> None:
    client = RecordingClient()
    env = dict(os.environ)  # the SDK passes a trimmed environment unless told otherwise
    with stderr_log.open("ab") as stderr:
        async with acp.spawn_agent_process(
            client,
            agent,
            *agent_args,
            env=env,
            cwd=workspace,
            transport_kwargs={"stderr": stderr, "limit": 64 * 1024 * 1024},
        ) as (conn, process):
            await run_checks(conn, client, workspace, checks)
            note("closing stdin")
        note(f"agent exited: code {process.returncode}")


async def prompt_turn(conn, client: RecordingClient, session_id: str, text: str):
    """Sends one prompt; returns the updates received during the turn and its stop reason."""
    start = len(client.updates)
    response = await asyncio.wait_for(
        conn.prompt(session_id=session_id, prompt=[acp.text_block(text)]), ANSWER_S
    )
    return client.updates[start:], response.stop_reason


async def run_checks(conn, client: RecordingClient, workspace: Path, checks: Checks) -> None:
    async def initialize() -> str:
        reply = await asyncio.wait_for(
            conn.initialize(
                protocol_version=acp.PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(read_text_file=False, write_text_file=False),
                    terminal=False,
                ),
                client_info=Implementation(name="zcode-acp-py-test", version="0"),
            ),
            ANSWER_S,
        )
        info = reply.agent_info
        note(f"initialize: protocolVersion {reply.protocol_version}, agentInfo {info}")
        check(reply.protocol_version == 1, f"protocolVersion {reply.protocol_version}")
        check(info is not None and info.name == "zcode-acp", f"agentInfo {info}")
        return f"agent {info.name} {info.version}"

    if not await checks.run("initialize", initialize):
        return
    session = await asyncio.wait_for(
        conn.new_session(cwd=str(workspace), mcp_servers=[]), SESSION_NEW_S
    )
    session_id = session.session_id
    note(f"session/new: {session_id}")

    async def streamed_reply() -> str:
        updates, stop = await prompt_turn(conn, client, session_id, "Hello from the Python SDK")
        chunks = [u for u in updates if u.session_update == "agent_message_chunk"]
        text = text_of(updates, "agent_message_chunk")
        note(f"reply: {summary(updates)}; text {text!r}; stopReason {stop}")
        check(len(chunks) >= 2, f"{len(chunks)} agent_message_chunk, expected a stream of several")
        check("You said: Hello from the Python SDK" in text, "reply does not echo the prompt")
        check(stop == "end_turn", f"stopReason {stop}")
        return f"{len(chunks)} chunks, end_turn"

    await checks.run("streamed reply", streamed_reply)

    asked_before = len(client.permission_requests)
    edit: dict[str, Any] = {}
    try:
        edit["updates"], edit["stop"] = await prompt_turn(
            conn, client, session_id, f"sim:edit {EDIT_PATH} {EDIT_CONTENT}"
        )
    except Exception as error:  # noqa: BLE001 - reported by both checks below
        edit["error"] = error
    asked = client.permission_requests[asked_before:]

    async def tool_call() -> str:
        if "error" in edit:
            raise edit["error"]
        updates, stop = edit["updates"], edit["stop"]
        note(f"edit: {summary(updates)}; stopReason {stop}")
        call = next((u for u in updates if u.session_update == "tool_call"), None)
        check(call is not None, "no tool_call update")
        note(f"tool_call: id {call.tool_call_id}, title {call.title!r}, kind {call.kind}, status {call.status}")
        finals = [
            u
            for u in updates
            if u.session_update == "tool_call_update" and u.tool_call_id == call.tool_call_id
        ]
        last = finals[-1].status if finals else None
        check(last == "completed", f"last tool_call_update status {last}")
        file = workspace / EDIT_PATH
        check(file.exists(), f"{EDIT_PATH} was not written")
        content = file.read_text()
        check(content.startswith(EDIT_CONTENT), f"{EDIT_PATH} holds {content!r}")
        check(stop == "end_turn", f"stopReason {stop}")
        return f"{call.tool_call_id} completed, {EDIT_PATH} written"

    async def permission() -> str:
        if "error" in edit:
            raise edit["error"]
        check(len(asked) == 1, f"{len(asked)} permission requests, expected 1")
        tool_call, options, chosen = asked[0]
        listed = ", ".join(f"{o.option_id}:{o.kind}" for o in options)
        note(f"request_permission: toolCall {tool_call.tool_call_id}; options {listed}; chose {chosen and chosen.option_id}")
        check(chosen is not None, "no allow option offered")
        check(any(o.kind.startswith("reject") for o in options), "no reject option offered")
        call = next((u for u in edit["updates"] if u.session_update == "tool_call"), None)
        check(call is not None and tool_call.tool_call_id == call.tool_call_id, "permission names another tool call")
        return f"approved {chosen.option_id}"

    await checks.run("tool call", tool_call)
    await checks.run("permission", permission)

    async def cancel() -> str:
        client.first_chunk.clear()
        start = len(client.updates)
        turn = asyncio.create_task(
            conn.prompt(session_id=session_id, prompt=[acp.text_block("sim:slow 60000")])
        )
        chunk = asyncio.create_task(client.first_chunk.wait())
        try:
            # Cancel once the turn is visibly running (its first chunk arrived).
            done, _ = await asyncio.wait({chunk, turn}, timeout=ANSWER_S, return_when=asyncio.FIRST_COMPLETED)
            check(done, f"no chunk and no answer within {ANSWER_S} s")
            if chunk not in done:
                raise CheckFailed(f"the slow prompt ended before streaming: {turn.result().stop_reason}")
            await conn.cancel(session_id=session_id)
            response = await asyncio.wait_for(asyncio.shield(turn), ANSWER_S)
        finally:
            for task in (chunk, turn):
                if not task.done():
                    task.cancel()
        updates = client.updates[start:]
        note(f"slow turn: {summary(updates)}; session/cancel sent; stopReason {response.stop_reason}")
        check(response.stop_reason == "cancelled", f"stopReason {response.stop_reason}")
        check("done" not in text_of(updates, "agent_message_chunk"), "the turn ran to its end")
        return "stopReason cancelled"

    await checks.run("cancel", cancel)


def main() -> int:
    if len(sys.argv) < 4:
        print(
            "usage: python py_client.py <zcode-acp> <workspace> <agent-stderr-log> [agent args…]",
            file=sys.stderr,
        )
        return 2
    agent, workspace, stderr_log = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    agent_args = sys.argv[4:] or ["--simulate"]
    checks = Checks("python-sdk", CHECKS)
    reason = "not reached"
    try:
        asyncio.run(scenario(agent, agent_args, workspace, stderr_log, checks))
    except BaseException as error:  # noqa: BLE001 - turn any crash into failed checks
        reason = f"client stopped: {type(error).__name__}: {error}"
    return checks.finish(reason)


if __name__ == "__main__":
    sys.exit(main())
