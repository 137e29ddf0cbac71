#!/usr/bin/env bash
# Builds the agentproxy wheel into dist/ with maturin (installed from PyPI into
# target/wheel-venv on first use). No arguments. AGENTPROXY_WHEEL_PROFILE picks the cargo
# profile (default release; the test suite uses dev to reuse its build).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/target/wheel-venv"
profile="${AGENTPROXY_WHEEL_PROFILE:-release}"
maturin_version="1.16.0"

if [[ ! -x "$venv/bin/maturin" ]] || [[ "$("$venv/bin/maturin" --version)" != "maturin $maturin_version" ]]; then
    python="${PYTHON:-python3}"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "maturin==$maturin_version"
fi
cd "$root"
rm -f dist/agentproxy-*.whl
"$venv/bin/maturin" build --locked --profile "$profile" --out dist --quiet
echo "build-wheel: $(ls dist/agentproxy-*.whl)"
