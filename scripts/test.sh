#!/usr/bin/env bash
# The whole test suite: unit, integration (real binary against a fake upstream) and
# end-to-end tests with real SDK clients. Installs the Python SDKs into .venv, Node.js 24
# into tests/node and Chromium (for the HTML report's browser tests) first.
#
# Every test binary runs even when one fails (--no-fail-fast), so one broken file does
# not hide the verdict of the others; the run ends with one summary of them all.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
./scripts/setup-python.sh
if [[ "${AGENTPROXY_SKIP_NODE_E2E:-}" != 1 ]]; then
    ./scripts/setup-node.sh
fi
if [[ "${AGENTPROXY_SKIP_BROWSER:-}" != 1 ]]; then
    ./scripts/setup-browser.sh
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
set +e
cargo test --locked --all-targets --no-fail-fast 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# cargo prints a `test result:` line per test binary; the summary adds them up and names
# every test that failed, whichever binary it was in.
awk -v secs=$((SECONDS - start)) '
    /^test result:/ {
        binaries++
        for (i = 1; i <= NF; i++) {
            if ($(i + 1) ~ /^(passed|failed|ignored)/) { n[$(i + 1)] += $i }
        }
    }
    /^---- .* stdout ----$/ { failed[++f] = $2 }
    END {
        printf "\ntest.sh: %d test binaries: %d passed, %d failed, %d ignored, in %dm%02ds\n",
            binaries, n["passed;"], n["failed;"], n["ignored;"], secs / 60, secs % 60
        for (i = 1; i <= f; i++) printf "  failed: %s\n", failed[i]
    }' "$log"
if [[ $status != 0 ]]; then
    echo "test.sh: FAILED (cargo test exited $status)" >&2
fi
exit "$status"
