#!/usr/bin/env python3
"""Checks registry/zcode-acp against the ACP Registry's rules, and release archives the way the
registry's CI runs an agent.

    python tests/registry/check.py [--release] [ARCHIVE ...]

Without archives: the entry only (schema, registry build rules, icon). With --release the
archives are the ones being published: agent.json must list each one's sha256 (CI builds its
own archive, whose bytes differ from the release's, so it checks only the .sha256 file beside
it). Each archive is then
extracted as the registry does, and its platform's `cmd` + `args` from agent.json is launched
from the extraction folder with an empty HOME and none of our environment variables:

- `initialize` exactly as the registry's auth check sends it; at least one auth method of type
  `agent` or `terminal` must come back (the registry refuses an entry otherwise);
- `session/new` with no ZCode installed: a clear error that says how to point at an install;
- `session/new` with a (fake) ZCode install that is signed out: `-32000` auth required, with
  the action `zcode-acp login`;
- the terminal auth method run the way a client runs it (`cmd` + the method's `args`);
- `session/new` under `--simulate`: a session.

Rules and payloads are those of agentclientprotocol/registry (see registry/README.md for the
files and commits they come from). Prints one PASS/FAIL line per check and ends with
"N passed, M failed"; exits 1 on any failure. No check is timed; every wait has a hang guard.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from pathlib import Path

import jsonschema

REPO = Path(__file__).resolve().parents[2]
ENTRY_DIR = REPO / "registry" / "zcode-acp"
SCHEMA = REPO / "registry" / "agent.schema.json"
HANG_GUARD = 120.0  # seconds; the registry's own auth check allows 120 s for `initialize`

PLATFORMS = {
    "darwin-aarch64": "aarch64-apple-darwin",
    "darwin-x86_64": "x86_64-apple-darwin",
    "linux-aarch64": "aarch64-unknown-linux-musl",
    "linux-x86_64": "x86_64-unknown-linux-musl",
    "windows-aarch64": "aarch64-pc-windows-msvc",
    "windows-x86_64": "x86_64-pc-windows-msvc",
}
# What the registry's auth check and protocol matrix send as `initialize` (client.py,
# protocol_matrix.py): terminal auth is declared only through the legacy `_meta` key.
REGISTRY_INITIALIZE = {
    "protocolVersion": 1,
    "clientInfo": {"name": "ACP Registry Validator", "version": "1.0.0"},
    "clientCapabilities": {
        "terminal": True,
        "fs": {"readTextFile": True, "writeTextFile": True},
        "_meta": {"terminal_output": True, "terminal-auth": True},
    },
}
AUTH_REQUIRED = -32000
ICON_PAINT_VALUES = {"currentcolor", "none", "inherit"}


class Report:
    def __init__(self) -> None:
        self.passed = 0
        self.failed = 0

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        if ok:
            self.passed += 1
            print(f"PASS {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}")
        return ok


# ----- the entry --------------------------------------------------------------------------------


def workspace() -> dict:
    with open(REPO / "Cargo.toml", "rb") as file:
        return tomllib.load(file)["workspace"]["package"]


def archive_name(version: str, target: str) -> str:
    ext = "zip" if target.endswith("-windows-msvc") else "tar.gz"
    return f"zcode-acp-{version}-{target}.{ext}"


def check_entry(report: Report, entry: dict) -> None:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    errors = [f"{'.'.join(map(str, e.absolute_path)) or 'root'}: {e.message}"
              for e in jsonschema.Draft7Validator(schema).iter_errors(entry)]
    report.check("agent.json is valid against the registry's agent.schema.json", not errors,
                 "; ".join(errors))

    report.check("the id is the entry folder's name", entry.get("id") == ENTRY_DIR.name,
                 f"id {entry.get('id')!r}, folder {ENTRY_DIR.name!r}")
    package = workspace()
    version = entry.get("version", "")
    report.check("the version is x.y.z and the workspace's",
                 re.fullmatch(r"\d+\.\d+\.\d+", version) is not None
                 and version == package["version"],
                 f"entry {version!r}, Cargo.toml {package['version']!r}")
    report.check("repository and license are the workspace's",
                 entry.get("repository") == package["repository"]
                 and entry.get("license") == package["license"],
                 f"{entry.get('repository')!r} {entry.get('license')!r}")

    binary = entry.get("distribution", {}).get("binary", {})
    report.check("a binary build for every platform (the registry needs darwin, linux, windows)",
                 set(binary) == set(PLATFORMS), f"platforms: {sorted(binary)}")
    base = f"{package['repository']}/releases/download/v{version}/"
    for registry_platform, target in PLATFORMS.items():
        spec = binary.get(registry_platform, {})
        windows = target.endswith("-windows-msvc")
        problems = []
        if spec.get("archive") != base + archive_name(version, target):
            problems.append(f"archive {spec.get('archive')!r}")
        if "/latest/" in spec.get("archive", ""):
            problems.append("a /latest/ URL")
        if spec.get("cmd") != ("./zcode-acp.exe" if windows else "./zcode-acp"):
            problems.append(f"cmd {spec.get('cmd')!r}")
        if spec.get("args", []) != []:
            problems.append(f"args {spec.get('args')!r} (the agent runs with none)")
        if "sha256" in spec and not re.fullmatch(r"[0-9a-f]{64}", spec["sha256"]):
            problems.append(f"sha256 {spec['sha256']!r}")
        report.check(f"{registry_platform}: archive {archive_name(version, target)} "
                     f"(release v{version}), cmd", not problems, ", ".join(problems))

    check_icon(report, ENTRY_DIR / "icon.svg")


def check_icon(report: Report, icon: Path) -> None:
    """The registry's icon rules (build_registry.py): 16x16, square, monochrome currentColor."""
    text = icon.read_text() if icon.is_file() else ""
    report.check("icon.svg exists", bool(text), f"no {icon}")
    width = re.search(r'<svg[^>]*\swidth=["\'](\d+)', text)
    height = re.search(r'<svg[^>]*\sheight=["\'](\d+)', text)
    box = re.search(r'viewBox=["\'][\d.]+\s+[\d.]+\s+([\d.]+)\s+([\d.]+)', text)
    size = (float(width.group(1)), float(height.group(1))) if width and height else \
        (float(box.group(1)), float(box.group(2))) if box else None
    report.check("icon is 16x16", size == (16.0, 16.0), f"size {size}")
    report.check("icon's viewBox is square", box is None or box.group(1) == box.group(2),
                 f"viewBox {box.groups() if box else None}")
    painted = re.findall(r'\b(?:fill|stroke)\s*=\s*["\']([^"\']+)["\']', text, re.I)
    for style in re.findall(r'\bstyle\s*=\s*["\']([^"\']+)["\']', text, re.I):
        painted += [m.strip() for m in re.findall(r"\b(?:fill|stroke)\s*:\s*([^;]+)", style, re.I)]
    hard = [value for value in painted if value.strip().lower() not in ICON_PAINT_VALUES]
    report.check("icon paints only with currentColor (no hard-coded colour)",
                 not hard and re.search("currentColor", text, re.I) is not None,
                 f"hard-coded: {hard}" if hard else "no currentColor")


# ----- an archive, run as the registry runs it ---------------------------------------------------


def extract(archive: Path, dest: Path) -> None:
    """As the registry's verify_agents.py extracts: zip, or tar.gz with the `data` filter."""
    dest.mkdir(parents=True)
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(dest)
    else:
        with tarfile.open(archive, "r:gz") as tf:
            tf.extractall(dest, filter="data")


def resolve_cmd(extracted: Path, cmd: str) -> Path | None:
    """As the registry resolves `cmd`: strip `./`, then the first match anywhere below."""
    name = cmd[2:] if cmd.startswith("./") else cmd
    return next(iter(extracted.rglob(name)), None)


def elf_links_dynamically(path: Path) -> str | None:
    """Why a 64-bit little-endian ELF file is not statically linked (PT_INTERP or DT_NEEDED),
    or None when it is static."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return "not a 64-bit little-endian ELF file"
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    segments = [struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize) for i in range(phnum)]
    for kind, _flags, offset, _vaddr, _paddr, size in segments:
        if kind == 3:  # PT_INTERP
            interpreter = data[offset:offset + size].rstrip(b"\0").decode(errors="replace")
            return f"it names an interpreter ({interpreter})"
        if kind == 2:  # PT_DYNAMIC: (tag, value) pairs; DT_NEEDED = 1
            for at in range(offset, offset + size, 16):
                tag, _ = struct.unpack_from("<qQ", data, at)
                if tag == 0:
                    break
                if tag == 1:
                    return "it needs shared libraries (DT_NEEDED)"
    return None


class AgentProcess:
    """The agent on pipes, driven with raw newline-delimited JSON-RPC, as the registry does."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.next_id = 1
        self.buffer = b""

    def request(self, method: str, params: dict) -> dict:
        request_id = self.next_id
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                           "params": params}) + "\n"
        self.proc.stdin.write(line.encode())
        self.proc.stdin.flush()
        while True:
            message = self.read_line()
            if message is None:
                return {"error": {"code": None, "message": f"no answer to {method}"}}
            if message.get("id") == request_id and ("result" in message or "error" in message):
                return message

    def read_line(self) -> dict | None:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([fd], [], [], HANG_GUARD)
            chunk = os.read(fd, 65536) if ready else b""
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> tuple[int | None, str]:
        """Closes stdin and waits for the exit; returns (exit code, stderr)."""
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=HANG_GUARD)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None, self.proc.stderr.read().decode(errors="replace")
        return self.proc.returncode, self.proc.stderr.read().decode(errors="replace")


def auth_type(method: dict) -> str:
    """The registry's reading of an auth method's type: `type`, else `_meta`, else agent."""
    if method.get("type"):
        return method["type"]
    meta = method.get("_meta") or {}
    if "terminal-auth" in meta:
        return "terminal"
    return "agent"


def clean_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The CI's environment without anything of ours, with an empty HOME (as the registry)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ZCODE_", "XDG_", "CARGO", "RUST"))}
    env.update({"HOME": str(home), "TERM": "dumb"})
    env.update(extra or {})
    return env


def check_archive(report: Report, entry: dict, archive: Path, sandbox: Path,
                  release: bool) -> None:
    names = {archive_name(entry["version"], target): (plat, target)
             for plat, target in PLATFORMS.items()}
    label = archive.name
    if not report.check(f"{label}: named as agent.json names an archive", archive.name in names,
                        f"expected one of {sorted(names)}"):
        return
    registry_platform, target = names[archive.name]
    spec = entry["distribution"]["binary"][registry_platform]

    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    sidecar = archive.with_name(archive.name + ".sha256")
    listed = sidecar.read_text().split() if sidecar.is_file() else []
    report.check(f"{label}: its .sha256 file matches", listed == [digest, archive.name],
                 f"{sidecar.name}: {listed}, archive {digest}")
    if release:
        report.check(f"{label}: agent.json lists its sha256", spec.get("sha256") == digest,
                     f"agent.json {spec.get('sha256')}, archive {digest}")

    extracted = sandbox / "extracted"
    extract(archive, extracted)
    exe = resolve_cmd(extracted, spec["cmd"])
    if not report.check(f"{label}: cmd {spec['cmd']} is in the archive", exe is not None,
                        f"members: {[p.name for p in extracted.rglob('*')]}"):
        return
    if target.endswith("-linux-musl"):
        why = elf_links_dynamically(exe)
        report.check(f"{label}: the binary is statically linked", why is None, str(why))
    if not target.startswith(os.uname().machine) or "linux" not in target:
        print(f"  (not runnable here: {target}; launch checks skipped)")
        return
    command = [str(exe), *spec.get("args", [])]

    # No ZCode at all: what the registry's CI machines are.
    home = sandbox / "home-no-install"
    home.mkdir()
    workspace = sandbox / "workspace"
    workspace.mkdir()
    agent = AgentProcess(command, extracted, clean_env(home))
    init = agent.request("initialize", REGISTRY_INITIALIZE)
    result = init.get("result", {})
    methods = result.get("authMethods") or []
    usable = [m for m in methods if auth_type(m) in ("agent", "terminal")]
    report.check(f"{label}: initialize as the registry sends it offers an agent or terminal "
                 "auth method", bool(usable), f"answer {init}")
    report.check(f"{label}: agentInfo.version is the entry's version",
                 result.get("agentInfo", {}).get("version") == entry["version"],
                 f"agentInfo {result.get('agentInfo')}")
    new = agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    message = new.get("error", {}).get("message", "")
    report.check(f"{label}: session/new without ZCode is a clear error naming --zcode-install",
                 "error" in new and "--zcode-install" in message, f"answer {new}")
    code, stderr = agent.close()
    report.check(f"{label}: exits 0 when the client closes stdin", code == 0,
                 f"exit {code}; stderr tail: {stderr[-400:]}")

    # A ZCode install (the simulator's fake one, laid out by this binary) that is signed out.
    install = sandbox / "zcode-install"
    laid = subprocess.run([str(exe), "simulator", "install", str(install)], cwd=extracted,
                          env=clean_env(home), capture_output=True, text=True,
                          timeout=HANG_GUARD)
    if not report.check(f"{label}: lays out a fake ZCode install", laid.returncode == 0,
                        laid.stderr[-400:]):
        return
    home = sandbox / "home-signed-out"
    home.mkdir()
    signed_out = {"ZCODE_ACP_ZCODE_INSTALL": str(install), "ZCODE_SIM_SIGNED_OUT": "1",
                  "ZCODE_SIM_STATE": str(sandbox / "sim-state")}
    agent = AgentProcess(command, extracted, clean_env(home, signed_out))
    agent.request("initialize", REGISTRY_INITIALIZE)
    new = agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    error = new.get("error", {})
    report.check(f"{label}: session/new signed out is auth required (-32000) naming "
                 "`zcode-acp login`",
                 error.get("code") == AUTH_REQUIRED
                 and "zcode-acp login" in json.dumps(error.get("data", {})), f"answer {new}")
    agent.close()

    # The advertised terminal method, run as a client runs it: cmd + the method's args.
    login = next((m for m in usable if auth_type(m) == "terminal"), None)
    if login is not None:
        ran = subprocess.run(command + login.get("args", []), cwd=extracted,
                             env=clean_env(home, {**signed_out, **login.get("env", {})}),
                             stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=HANG_GUARD)
        report.check(f"{label}: the terminal auth method ({' '.join(login.get('args', []))}) "
                     "runs ZCode's login", ran.returncode == 0 and "http" in ran.stdout,
                     f"exit {ran.returncode}: {ran.stdout[-200:]} {ran.stderr[-300:]}")

    # The simulator: a session without any ZCode.
    home = sandbox / "home-simulate"
    home.mkdir()
    agent = AgentProcess(command + ["--simulate"], extracted,
                         clean_env(home, {"ZCODE_SIM_STATE": str(sandbox / "sim-state-2")}))
    agent.request("initialize", REGISTRY_INITIALIZE)
    new = agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
    report.check(f"{label}: session/new under --simulate opens a session",
                 isinstance(new.get("result", {}).get("sessionId"), str), f"answer {new}")
    code, stderr = agent.close()
    report.check(f"{label}: --simulate exits 0 when the client closes stdin", code == 0,
                 f"exit {code}; stderr tail: {stderr[-400:]}")


def main() -> int:
    args = sys.argv[1:]
    release = "--release" in args
    archives = [Path(a).resolve() for a in args if a != "--release"]
    report = Report()
    entry = json.loads((ENTRY_DIR / "agent.json").read_text())
    check_entry(report, entry)
    for archive in archives:
        sandbox = Path(tempfile.mkdtemp(prefix="zcode-acp-registry-"))
        try:
            check_archive(report, entry, archive, sandbox, release)
        finally:
            shutil.rmtree(sandbox, ignore_errors=True)
    print(f"{report.passed} passed, {report.failed} failed")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
