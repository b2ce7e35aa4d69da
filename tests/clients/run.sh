#!/usr/bin/env bash
# Drives `zcode-acp --simulate` with real ACP clients: over ACP v1 acpx 0.19.1, the TypeScript
# SDK (@agentclientprotocol/sdk 2.4.0) and the Python SDK (agent-client-protocol 0.12.1); over
# ACP v2 the TypeScript SDK's v2 client, with every agent frame checked against the v2 schema;
# then `session/fork` over v1 and v2 through the SDK's unstable APIs, every frame both ways
# checked against the SDK's unstable schemas (the only ones that define `session/fork`).
#
#   tests/clients/run.sh <path-to-zcode-acp> [agent args…]
#
# The agent args replace the default `--simulate` for every client, e.g.
# `--simulate --simulate-version 3.12.3` to play another simulated ZCode release.
#
# Installs the clients only when missing (npm ci into tests/clients/node_modules, a venv at
# target/clients-venv), runs each scenario in its own temporary folder with an isolated HOME
# and simulator state, prints one line per check and ends with "N passed, M failed".
# Set KEEP_CLIENT_RUNS=1 to keep the temporary folders (transcripts and agent logs).
set -uo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 <path-to-zcode-acp> [agent args…]" >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
agent=$(realpath "$1") || exit 2
shift
agent_args=("$@")
if [[ ${#agent_args[@]} -eq 0 ]]; then
  agent_args=(--simulate)
fi
if [[ ! -x $agent ]]; then
  echo "run.sh: $1 is not an executable" >&2
  exit 2
fi

# --- the clients, installed once ----------------------------------------------------------
# (again when a dependency of package.json is missing, e.g. one added since the last install)
node_deps_missing() {
  node -e 'const fs = require("fs"), path = require("path");
    const deps = Object.keys(require(path.join(process.argv[1], "package.json")).dependencies);
    process.exit(deps.every((d) => fs.existsSync(path.join(process.argv[1], "node_modules", d))) ? 1 : 0);' "$here"
}
if [[ ! -d $here/node_modules ]] || node_deps_missing; then
  echo "installing the Node clients (npm ci)…" >&2
  npm_log=$(mktemp)
  if ! npm ci --prefix "$here" --no-audit --no-fund --loglevel=error >/dev/null 2>"$npm_log"; then
    # npm ci refuses a lockfile that lacks optional platform packages the registry could not
    # supply (acpx's @openclaw/fs-safe-darwin-* and friends here); npm install still installs
    # exactly the locked versions and leaves the lockfile as it is.
    echo "npm ci refused the lockfile ($(grep -m1 'Missing:' "$npm_log" || tail -n 1 "$npm_log")); using npm install" >&2
    npm install --prefix "$here" --no-audit --no-fund --loglevel=error >/dev/null || exit 2
  fi
  rm -f "$npm_log"
fi
venv=$repo/target/clients-venv
if [[ ! -x $venv/bin/python ]]; then
  echo "installing the Python client into $venv…" >&2
  python3 -m venv "$venv" >&2 && "$venv/bin/pip" install --quiet --disable-pip-version-check \
    -r "$here/requirements.txt" >&2 || { rm -rf "$venv"; exit 2; }
fi

# --- shared state ------------------------------------------------------------------------
runs=$(mktemp -d "${TMPDIR:-/tmp}/zcode-acp-clients.XXXXXX")
if [[ ${KEEP_CLIENT_RUNS:-0} == 1 ]]; then
  echo "keeping the runs in $runs" >&2
else
  trap 'rm -rf "$runs"' EXIT
fi
# The mapper runtime caches compiled mappers by content hash under $XDG_CACHE_HOME; sharing that
# cache across runs keeps a debug build from recompiling the embedded mapper every time.
export XDG_CACHE_HOME=$repo/target/clients-cache
mkdir -p "$XDG_CACHE_HOME"

passed=0
failed=0
started=$(date +%s)

# Counts a scenario's PASS/FAIL lines; a scenario that exits non-zero without reporting a
# failure counts (and prints) one failure itself.
tally() {
  local name=$1 status=$2 output=$3 fails
  fails=$(grep -c '^FAIL ' <<<"$output")
  passed=$((passed + $(grep -c '^PASS ' <<<"$output")))
  failed=$((failed + fails))
  if [[ $status -ne 0 && $fails -eq 0 ]]; then
    echo "FAIL $name: the scenario exited with status $status"
    failed=$((failed + 1))
  fi
}

# new_scenario NAME: the scenario's own folder, $runs/NAME, with a HOME and a workspace.
new_scenario() {
  mkdir -p "$runs/$1/home" "$runs/$1/workspace"
}
# run_scenario NAME COMMAND...: runs COMMAND in that workspace with that HOME and its own
# simulator state; prints its lines as they come, then the tail of its stderr if any.
run_scenario() {
  local name=$1 dir=$runs/$1 status
  shift
  (cd "$dir/workspace" && HOME=$dir/home ZCODE_SIM_STATE=$dir/sim-state \
    XDG_CONFIG_HOME=$dir/home/.config XDG_DATA_HOME=$dir/home/.local/share \
    "$@" 2>"$dir/client.stderr") | tee "$dir/output"
  status=${PIPESTATUS[0]}
  if [[ -s $dir/client.stderr ]]; then
    tail -n 5 "$dir/client.stderr" | sed 's/^/  ! /'
  fi
  tally "$name" "$status" "$(cat "$dir/output")"
}

# Warm the mapper cache once (a cold debug build compiles the embedded mapper slowly); a
# failure here shows up again, with its message, in every scenario.
"$agent" mapper list >/dev/null 2>"$runs/mapper-list.stderr" ||
  echo "  ! zcode-acp mapper list failed: $(tail -n 1 "$runs/mapper-list.stderr")"

echo "agent: $agent ${agent_args[*]}"
new_scenario acpx
run_scenario acpx node "$here/acpx-scenario.mjs" "$agent" "$runs/acpx" "${agent_args[@]}"
new_scenario ts-sdk
run_scenario ts-sdk node "$here/ts-client.mjs" "$agent" "$runs/ts-sdk/workspace" \
  "$runs/ts-sdk/agent.stderr" "${agent_args[@]}"
new_scenario python-sdk
run_scenario python-sdk "$venv/bin/python" "$here/py_client.py" "$agent" \
  "$runs/python-sdk/workspace" "$runs/python-sdk/agent.stderr" "${agent_args[@]}"
new_scenario ts-sdk-v2
run_scenario ts-sdk-v2 node "$here/ts-v2-client.mjs" "$agent" "$runs/ts-sdk-v2/workspace" \
  "$runs/ts-sdk-v2/agent.stderr" "${agent_args[@]}"

new_scenario ts-sdk-fork
run_scenario ts-sdk-fork node "$here/ts-fork-client.mjs" "$agent" "$runs/ts-sdk-fork/workspace" \
  "$runs/ts-sdk-fork/agent.stderr" "${agent_args[@]}"

echo "run time: $(($(date +%s) - started)) s"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
