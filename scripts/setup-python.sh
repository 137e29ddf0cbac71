#!/usr/bin/env bash
# Creates .venv, .venv-sk and .venv-strands at the repository root with the Python packages the
# end-to-end tests use (tests/e2e/requirements.txt, requirements-sk.txt, requirements-strands.txt).
# Idempotent: it rebuilds a venv only when it is missing or its requirements changed since
# it was built, so CI can call it every run.
#
# Usage: scripts/setup-python.sh        (PYTHON=python3.12 to choose the interpreter)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

python="${PYTHON:-}"
if [[ -z "$python" ]]; then
    for candidate in python3 python; do
        if command -v "$candidate" >/dev/null 2>&1; then
            python="$candidate"
            break
        fi
    done
fi
if [[ -z "$python" ]]; then
    echo "setup-python: no python3 found on PATH (set PYTHON=...)" >&2
    exit 1
fi
# The pinned openai SDK needs Python 3.9 or newer.
if ! "$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)'; then
    echo "setup-python: $python is $("$python" --version 2>&1); 3.9 or newer is required" >&2
    exit 1
fi

# One venv per requirements file: .venv (tests/e2e/requirements.txt) and .venv-sk
# (tests/e2e/requirements-sk.txt: Semantic Kernel, whose pins conflict with the main ones).
setup() {
    local venv="$1" requirements="$2"
    local stamp="$venv/.requirements.sha256" wanted
    wanted="$(sha256sum "$requirements" | cut -d' ' -f1)"
    if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]]; then
        echo "setup-python: $venv is up to date"
        return
    fi
    echo "setup-python: creating $venv with $("$python" --version 2>&1)"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
    # Written last, so an interrupted install is redone on the next call.
    echo "$wanted" >"$stamp"
    echo "setup-python: installed $(grep -v '^#' "$requirements" | tr '\n' ' ')"
}

setup "$root/.venv" "$root/tests/e2e/requirements.txt"
setup "$root/.venv-sk" "$root/tests/e2e/requirements-sk.txt"
setup "$root/.venv-strands" "$root/tests/e2e/requirements-strands.txt"
