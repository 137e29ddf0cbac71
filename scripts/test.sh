#!/usr/bin/env bash
# The whole test suite: unit, integration (real binary against a fake upstream) and
# end-to-end tests with real SDK clients. Installs the Python SDKs into .venv, Node.js 24
# into tests/node and Chromium (for the HTML report's browser tests) first.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-python.sh
if [[ "${AGENTPROXY_SKIP_NODE_E2E:-}" != 1 ]]; then
    ./scripts/setup-node.sh
fi
if [[ "${AGENTPROXY_SKIP_BROWSER:-}" != 1 ]]; then
    ./scripts/setup-browser.sh
fi
cargo test --locked --all-targets
