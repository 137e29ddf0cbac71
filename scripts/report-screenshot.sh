#!/usr/bin/env bash
# Makes docs/images/report.png, the HTML report shown in docs/reports.md, from a
# real run: the travel example's specs replayed from their committed cassettes, beside a
# copy of one case asserted wrongly (so the page shows a failure), rendered by headless
# Chromium. Needs the built binary (cargo build), .venv and chromium
# (scripts/setup-python.sh, scripts/setup-browser.sh). Usage: report-screenshot.sh [OUT.png]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/docs/images/report.png}"
bin="${AGENTPROXY_BIN:-$root/target/debug/agentproxy}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

mkdir "$work/cassettes"
cp "$root/cassettes/examples/travel-agent/paris-weather.json" "$work/cassettes/"
cat > "$work/failing.yaml" <<YAML
name: Travel, asserted wrongly
app:
  command: [$root/.venv/bin/python, $root/examples/travel-agent/agent.py]
cassettes: $work/cassettes
cases:
  - name: paris weather
    input: What's the weather in Paris?
    expect:
      calls:
        - get_weather: {city: Lyon}
      reply: "31°C"
YAML
cd "$root"
"$bin" test examples/travel-agent/travel.yaml examples/travel-agent/faults.yaml \
    "$work/failing.yaml" --mode replay -q --html "$work/report.html" || true
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$work/profile" --window-size=1100,1300 --screenshot="$out" \
    "file://$work/report.html" 2>/dev/null
echo "report-screenshot: $out"
