#!/usr/bin/env bash
# The whole test suite: unit, integration (real binary against a fake upstream) and
# end-to-end tests with real SDK clients. Installs the Python SDKs into .venv first.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-python.sh
cargo test --locked --all-targets
