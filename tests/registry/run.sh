#!/usr/bin/env bash
# Checks the ACP Registry entry, and each archive given the way the registry's CI runs it:
#
#   tests/registry/run.sh [--release] [target/dist/zcode-acp-<version>-<target>.tar.gz ...]
#
# Installs jsonschema (the registry's validator) into target/registry-venv when missing, then
# runs check.py, which prints one line per check and ends with "N passed, M failed".
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
venv=$repo/target/registry-venv
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import jsonschema' 2>/dev/null; then
  echo "installing jsonschema into $venv…" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
fi
exec "$venv/bin/python" "$here/check.py" "$@"
